// The async shell of the OpenAI provider-native lanes of the `remote` method (spec: compaction
// §5.7 step 1, §13). The core gives the plan's messages and reads the answers (untrusted: V1's
// JSON, V2's event stream) before it writes the entry, and fits the input to the window and
// picks V2's retained messages; this module builds the requests — which lanes the model takes,
// the URL, the Responses input items of the messages, the body — and sends them with the
// host's `fetch` and `credentials`, a five-minute time-out per request, V2's stream retries
// and the AbortSignal. V2 (streaming Responses with a `compaction_trigger` item) goes first
// when the model takes it; a V2 failure falls back to V1 (`…/responses/compact`). A failed
// lane leaves the session as it was.
import { nowOf } from './args.js';
import { abortError, codedError, messageOf, statusOf } from './errors.js';
import { committed, requireRaw } from './raw.js';

/** Time-out of one native request, body included (the reference: five minutes). */
const NATIVE_TIMEOUT_MS = 300_000;
/** V2: retries of a transient failure, after `base · 2^attempt` ms. */
const V2_RETRIES = 2;
const RETRY_BASE_MS = 1000;
/** A `retry-after` longer than this is not waited for: the walk moves on (spec §8.3: 30 s). */
const MAX_RETRY_AFTER_MS = 30_000;
/** Failures a second V2 attempt can mend: a cut or unreadable stream, an overloaded server. */
const TRANSIENT =
  /closed before response\.completed|stream parse failed|server_error|internal_error|overloaded|service unavailable|timed out|fetch failed/i;
const LANE_NAME = {
  v1: 'OpenAI remote compaction',
  v2: 'OpenAI V2 remote compaction',
  anthropic: 'Anthropic compaction',
};

const RESPONSES_APIS = ['openai-responses', 'azure-openai-responses', 'openai-codex-responses'];
const OPENAI_BASE = 'https://api.openai.com/v1';
const CODEX_BASE = 'https://chatgpt.com/backend-api';
const NO_VISION = '[image omitted: model does not support vision]';

const str = (v) => (typeof v === 'string' && v.length > 0 ? v : undefined);

/** The model a lane serves, from `o.model` with the `provider` / `contextWindow` options over it. */
function modelFields(o) {
  const m = o.model;
  if (m === null || typeof m !== 'object') return undefined;
  const rc = m.remoteCompaction !== null && typeof m.remoteCompaction === 'object' ? m.remoteCompaction : {};
  const id = str(m.id);
  const provider = str(o.provider ?? m.provider);
  const api = str(m.api);
  if (!id || !provider || !api) return undefined;
  const window = o.contextWindow ?? m.contextWindow;
  return {
    id,
    provider,
    api,
    base: str(m.baseUrl?.trim?.()),
    contextWindow: Number.isFinite(window) && window > 0 ? window : 0,
    images: Array.isArray(m.input) && m.input.includes('image'),
    enabled: typeof rc.enabled === 'boolean' ? rc.enabled : undefined,
    endpoint: str(rc.endpoint?.trim?.()),
    v2Endpoint: str(rc.v2Endpoint) ?? str(rc.streamingEndpoint),
    v2: rc.v2StreamingEnabled === true,
    wireId: str(rc.model) ?? str(m.requestModelId) ?? id,
    azure: api === 'azure-openai-responses',
    codex: provider === 'openai-codex' || api === 'openai-codex-responses',
  };
}

const speaksResponses = (m) => m.enabled !== false && RESPONSES_APIS.includes(m.api);
/** `url` without its trailing slashes, in one backward pass (`/\/+$/` is quadratic on a long run of slashes followed by another character). */
export function trimSlashes(url) {
  let end = url.length;
  while (end > 0 && url.charCodeAt(end - 1) === 47) end--;
  return url.slice(0, end);
}
const baseOf = (m, fallback) => trimSlashes(m.base ?? fallback);
const withAzureVersion = (url) =>
  /[?&]api-version=/.test(url) ? url : `${url}${url.includes('?') ? '&' : '?'}api-version=v1`;

/**
 * The V1 `…/responses/compact` URL, or undefined: only the Responses dialects; `openai` always,
 * `openai-codex` only with an explicit endpoint (ChatGPT's Codex backend has no V1 route), any
 * other provider when it opts in (`remoteCompaction.enabled`); Azure needs a base URL.
 */
function v1Url(m) {
  if (!speaksResponses(m)) return undefined;
  if (m.provider === 'openai-codex' ? !m.endpoint : m.provider !== 'openai' && m.enabled !== true) return undefined;
  if (m.azure) {
    if (!m.endpoint && !m.base) return undefined;
    return withAzureVersion(m.endpoint ?? `${baseOf(m, '')}/responses/compact`);
  }
  if (m.endpoint) return m.endpoint;
  if (m.codex) {
    const base = baseOf(m, CODEX_BASE);
    return /\/codex(?:\/v\d+)?$/.test(base) ? `${base}/responses/compact` : `${base}/codex/responses/compact`;
  }
  const base = baseOf(m, OPENAI_BASE);
  return base.endsWith('/v1') ? `${base}/responses/compact` : `${base}/v1/responses/compact`;
}

/** The V2 streaming Responses URL, or undefined: a Responses dialect that opted in (`remoteCompaction.v2StreamingEnabled`). */
function v2Url(m) {
  if (!speaksResponses(m) || !m.v2) return undefined;
  if (m.v2Endpoint) return m.v2Endpoint;
  if (m.azure) return m.base ? withAzureVersion(`${baseOf(m, '')}/responses`) : undefined;
  if (m.codex) {
    const base = baseOf(m, CODEX_BASE);
    if (base.endsWith('/codex/responses')) return base;
    return base.endsWith('/codex') ? `${base}/responses` : `${base}/codex/responses`;
  }
  const base = baseOf(m, OPENAI_BASE);
  if (base.endsWith('/responses')) return base;
  return base.endsWith('/v1') ? `${base}/responses` : `${base}/v1/responses`;
}

function resolved(settings) {
  return JSON.parse(requireRaw().resolveSettingsJson(JSON.stringify(settings ?? {})));
}

/** The lanes of a model under resolved settings, V2 first. */
function lanesOf(m, s) {
  if (m === undefined || s.remoteEnabled === false) return [];
  const out = [];
  if (s.remoteStreamingV2Enabled !== false && v2Url(m)) out.push('v2');
  if (v1Url(m)) out.push('v1');
  return out;
}

/** The OpenAI lanes the `remote` method can take for `o.model` under `settings` (`['v2', 'v1']`, `['v1']`, …). */
export function openaiLanes(o, settings) {
  return lanesOf(modelFields(o), resolved(settings));
}

// ----- provider messages → Responses input items --------------------------------------------

/** A stable short hash for ids the provider limits to 64 characters (FNV-1a, base 36). */
function shortHash(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(36);
}

/** A tool call id as `[call_id, item id]`: `call|item` keeps both (an item of another prefix than `fc`/`fcr` is re-minted). */
export function splitCallId(id) {
  const sep = id.search(/[\n|]/);
  if (sep <= 0) return [id, `fc_${shortHash(id)}`];
  const item = id.slice(sep + 1);
  const prefix = item.match(/^([a-zA-Z][a-zA-Z0-9]*)_/)?.[1];
  if (prefix !== 'fc' && prefix !== 'fcr') return [id.slice(0, sep), `fc_${shortHash(item)}`];
  return [id.slice(0, sep), item.length > 64 ? `${prefix}_${shortHash(item)}` : item];
}

const imageItem = (b) => ({ type: 'input_image', detail: 'auto', image_url: `data:${b.mimeType};base64,${b.data}` });
const blank = (t) => typeof t !== 'string' || t.trim() === '';

function userContent(content) {
  if (typeof content === 'string') return blank(content) ? [] : [{ type: 'input_text', text: content }];
  if (!Array.isArray(content)) return [];
  const out = [];
  for (const b of content) {
    if (b?.type === 'text' && !blank(b.text)) out.push({ type: 'input_text', text: b.text });
    if (b?.type === 'image') out.push(imageItem(b));
  }
  return out;
}

/** A message's Responses history payload of `provider`: `{items, extends}`, or undefined. */
function historyPayload(m, provider, fallback) {
  const p = m.providerPayload;
  if (p?.type !== 'openaiResponsesHistory' || !Array.isArray(p.items)) return undefined;
  if ((p.provider ?? fallback ?? provider) !== provider) return undefined;
  return { items: p.items.filter((i) => i !== null && typeof i === 'object'), extends: p.dt === true };
}

/** A text signature of pi's Responses provider (`{v:1,id,phase}` JSON, or a plain id) as `{ id?, phase? }`. */
export function textSignature(sig) {
  if (typeof sig !== 'string' || sig === '') return {};
  if (sig.startsWith('{')) {
    try {
      const v = JSON.parse(sig);
      if (v?.v === 1 && typeof v.id === 'string') {
        return { id: v.id, phase: ['commentary', 'final_answer'].includes(v.phase) ? v.phase : undefined };
      }
    } catch {
      // A plain id.
    }
  }
  return { id: sig };
}

function assistantItems(m, n, model, out) {
  const otherModel = m.model !== model.id && m.provider === model.provider && m.api === model.api;
  const calls = [];
  for (const b of Array.isArray(m.content) ? m.content : []) {
    if (b?.type === 'thinking' && m.stopReason !== 'error' && typeof b.thinkingSignature === 'string') {
      // The signature of Responses reasoning is the reasoning item itself, as JSON.
      try {
        const item = JSON.parse(b.thinkingSignature);
        if (item !== null && typeof item === 'object' && !Array.isArray(item)) out.push(item);
      } catch {
        // Not a Responses reasoning item.
      }
    } else if (b?.type === 'text' && !blank(b.text)) {
      const sig = textSignature(b.textSignature);
      const id = sig.id === undefined ? `msg_${n}` : sig.id.length > 64 ? `msg_${shortHash(sig.id)}` : sig.id;
      const item = {
        type: 'message',
        role: 'assistant',
        content: [{ type: 'output_text', text: b.text, annotations: [] }],
        id,
      };
      if (sig.phase) item.phase = sig.phase;
      out.push(item);
    } else if (b?.type === 'toolCall') {
      const [call, item] = splitCallId(String(b.id ?? ''));
      calls.push({
        type: 'function_call',
        // Another model's item ids are not replayable.
        id: otherModel ? undefined : item,
        call_id: call,
        name: String(b.name ?? ''),
        arguments: JSON.stringify(b.arguments ?? null),
      });
    }
  }
  // A call batch is followed by its outputs: text written after the calls goes before them.
  out.push(...calls);
}

function toolOutput(m, model) {
  const blocks = Array.isArray(m.content) ? m.content : [];
  const text = blocks
    .filter((b) => b?.type === 'text')
    .map((b) => b.text)
    .join('\n');
  const images = blocks.some((b) => b?.type === 'image');
  if (images && model.images) {
    return blocks
      .filter((b) => b?.type === 'image' || b?.type === 'text')
      .map((b) => (b.type === 'image' ? imageItem(b) : { type: 'input_text', text: b.text }));
  }
  if (!images) return text;
  return text === '' ? NO_VISION : `${text}\n${NO_VISION}`;
}

/**
 * The Responses input items of provider messages after `previous` (a replacement history of
 * this provider). A message carrying Responses history of this provider is replayed as those
 * items; tool results whose call is not in the history are left out; output-only `status`
 * fields are dropped.
 */
export function responsesInput(messages, model, previous = []) {
  let input = [...previous];
  const known = new Set();
  const note = (items) => {
    for (const i of items) if (i?.type === 'function_call' || i?.type === 'custom_tool_call') known.add(i.call_id);
  };
  note(input);
  messages.forEach((m, n) => {
    if (m?.role === 'user' || m?.role === 'developer') {
      const payload = historyPayload(m, model.provider);
      if (payload) {
        note(payload.items);
        input.push(...payload.items);
        return;
      }
      const content = userContent(m.content);
      if (content.length > 0) input.push({ type: 'message', role: m.role, content });
    } else if (m?.role === 'assistant') {
      const payload = historyPayload(m, model.provider, m.provider);
      if (payload) {
        if (!payload.extends) {
          input = [];
          known.clear();
        }
        note(payload.items);
        input.push(...payload.items);
        return;
      }
      const from = input.length;
      assistantItems(m, n, model, input);
      note(input.slice(from));
    } else if (m?.role === 'toolResult') {
      const [call] = splitCallId(String(m.toolCallId ?? ''));
      if (known.has(call)) input.push({ type: 'function_call_output', call_id: call, output: toolOutput(m, model) });
    }
  });
  const statusless = ['message', 'function_call', 'custom_tool_call', 'compaction', 'compaction_summary'];
  return input.map((i) => {
    if (!statusless.includes(i.type) || !Object.hasOwn(i, 'status')) return i;
    const { status: _status, ...rest } = i;
    return rest;
  });
}

/**
 * The requests of a `remote` plan for model `m`: `{v2?, v1?, retained}`, each `{url, headers,
 * body}` (body as JSON text); undefined when there is nothing to send.
 */
function buildRequests(plan, m, lanes, settings, n) {
  const { messages, previous, instructions: system } = JSON.parse(plan._session().nativeMessagesJson(plan._raw()));
  const prior =
    previous?.provider === m.provider && Array.isArray(previous.replacementHistory) ? previous.replacementHistory : [];
  const input = responsesInput(messages, m, prior);
  if (input.length === 0) return undefined;
  const instructions = n.instructions ?? system;
  const tools = Array.isArray(n.tools) && n.tools.length > 0 ? n.tools : undefined;
  // The core fits the input to the window and picks V2's retained messages (spec §13).
  const fitted = JSON.parse(
    requireRaw().nativeOpenaiInputsJson(
      JSON.stringify(input),
      typeof instructions === 'string' ? instructions : undefined,
      tools === undefined ? undefined : JSON.stringify(tools),
      m.contextWindow,
      Number.isFinite(settings.v2RetainedMessageBudget) ? settings.v2RetainedMessageBudget : undefined,
    ),
  );
  const beta = m.codex ? { 'OpenAI-Beta': 'responses=experimental' } : {};
  const out = {};
  if (lanes.includes('v1')) {
    const body = { model: m.wireId, input: fitted.v1, instructions };
    out.v1 = { url: v1Url(m), headers: { 'content-type': 'application/json', ...beta }, body: JSON.stringify(body) };
  }
  if (lanes.includes('v2')) {
    const body = {
      model: m.wireId,
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
    const codex = m.codex ? { ...beta, 'x-codex-beta-features': 'remote_compaction_v2' } : {};
    out.v2 = { url: v2Url(m), headers: { 'content-type': 'application/json', ...codex }, body: JSON.stringify(body) };
    out.retained = fitted.retained;
  }
  return out;
}

export function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(abortError());
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError());
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Settles like `promise`, or rejects with the abort error as soon as `signal` aborts. */
function untilAbort(promise, signal) {
  if (signal.aborted) return Promise.reject(abortError());
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(abortError());
    signal.addEventListener('abort', onAbort, { once: true });
    Promise.resolve(promise)
      .then(resolve, reject)
      .finally(() => signal.removeEventListener('abort', onAbort));
  });
}

function httpError(message, status, retryAfterMs = -1) {
  return Object.assign(new Error(message), { status, retryAfterMs });
}

/** Whether another V2 attempt can mend `err`: not an auth failure; a transient status or a transient message. */
function retryable(err) {
  const status = statusOf(err);
  if (status === 401 || status === 403) return false;
  if (status !== undefined) return status === 408 || status === 429 || status >= 500;
  return TRANSIENT.test(messageOf(err));
}

/**
 * One POST of `request` (`{url, headers, body}`) for `lane` (`v1`, `v2`, `anthropic`),
 * resolving the whole answer text; `ctx`: `{o, model: {provider, api}, signal, timeoutMs}`.
 * Shared by every provider-native lane.
 */
export async function post(request, lane, ctx) {
  const { o, model, signal, timeoutMs } = ctx;
  const headers = { ...request.headers, ...o.headers };
  if (typeof o.credentials === 'function') {
    const extra = await untilAbort(
      o.credentials({ provider: model.provider, api: model.api, url: request.url }),
      signal,
    );
    if (extra !== null && typeof extra === 'object') Object.assign(headers, extra);
  }
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const forward = () => controller.abort();
  signal.addEventListener('abort', forward, { once: true });
  try {
    const res = await (o.fetch ?? globalThis.fetch)(request.url, {
      method: 'POST',
      headers,
      body: request.body,
      signal: controller.signal,
    });
    if (!res.ok) {
      const ra = res.headers.get('retry-after');
      await res.text().catch(() => '');
      throw httpError(
        `${LANE_NAME[lane]} failed (${res.status} ${res.statusText})`,
        res.status,
        ra === null ? -1 : requireRaw().retryAfterMs(ra, Date.now()),
      );
    }
    return await res.text();
  } catch (err) {
    if (signal.aborted) throw abortError();
    if (controller.signal.aborted) throw httpError(`${LANE_NAME[lane]} timed out after ${timeoutMs} ms`, 408);
    if (statusOf(err) !== undefined) throw err;
    throw new Error(`${LANE_NAME[lane]} failed: ${messageOf(err)} (fetch failed)`, { cause: err });
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', forward);
  }
}

/**
 * One lane: POST, then commit the answer. V2 retries a transient failure up to twice with
 * backoff (at least the `retry-after` of a 429/503); V1 retries only a 429/503 whose
 * `retry-after` is within 30 s, once. A user abort is never retried.
 */
async function runLane(lane, request, ctx) {
  const { plan, requests, model, o, signal } = ctx;
  const base = o.native?.retryBaseMs ?? RETRY_BASE_MS;
  const retained = lane === 'v2' ? JSON.stringify(requests.retained) : undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      const text = await post(request, lane, ctx);
      const raw = plan._session();
      return committed(raw.commitNative(plan._raw(), lane, model.provider, '', text, retained, nowOf(o)), raw);
    } catch (err) {
      if (signal.aborted) throw abortError();
      const status = statusOf(err);
      const after = status === 429 || status === 503 ? (err.retryAfterMs ?? -1) : -1;
      const again = lane === 'v2' ? attempt < V2_RETRIES && retryable(err) : attempt === 0 && after >= 0;
      if (!again || after > MAX_RETRY_AFTER_MS) throw err;
      await sleep(Math.max(lane === 'v2' ? base * 2 ** attempt : 0, after), signal);
    }
  }
}

/**
 * Runs the OpenAI native lanes on a `remote` plan: V2 first, V1 after a V2 failure. Resolves
 * the commit (`{entryId, tokensAfter, compactionEntry, fromExtension}`), or `undefined` when
 * no lane applies to `o.model` (or the plan has nothing to send). Rejects with `E_ABORTED`, or
 * with `E_SUMMARIZER` (`status`, `cause`: the first failure that was not an auth failure,
 * `lane`) when every lane failed; the session is unchanged then.
 */
export async function runOpenaiNative(plan, o, signal) {
  const model = modelFields(o);
  const settings = resolved(o.settings);
  // The plan is the `remote` method's: remote compaction is on for it (spec §8.3).
  const lanes = lanesOf(model, { ...settings, remoteEnabled: true });
  if (lanes.length === 0) return undefined;
  const n = o.native ?? {};
  const requests = buildRequests(plan, model, lanes, settings, n);
  if (requests === undefined) return undefined;
  const ctx = { plan, requests, o, model, signal, timeoutMs: n.timeoutMs ?? NATIVE_TIMEOUT_MS };
  const failures = [];
  for (const lane of lanes) {
    try {
      return await runLane(lane, requests[lane], ctx);
    } catch (err) {
      if (signal.aborted || err?.code === 'E_ABORTED') throw abortError();
      failures.push({ lane, err });
    }
  }
  if (failures.length === 0) return undefined;
  const auth = (f) => [401, 403].includes(statusOf(f.err));
  const first = failures.find((f) => !auth(f)) ?? failures[0];
  const message = failures.map((f) => messageOf(f.err)).join('; ');
  const err = codedError('E_SUMMARIZER', `Provider-native compaction failed: ${message}`, {
    cause: first.err,
    status: statusOf(first.err),
  });
  err.lane = first.lane;
  throw err;
}
