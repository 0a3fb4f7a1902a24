// The async shell of the OpenAI provider-native lanes of the `remote` method (spec: compaction
// §5.7 step 1, §13). The core decides which lanes a model takes and where they POST
// (`nativeLanesJson`), gives the plan's messages, fits the input to the window, picks V2's
// retained messages and reads the answers (untrusted: V1's JSON, V2's event stream) before it
// writes the entry; the input items are the openai-responses format's (its writer, with the
// native lane's options). This module assembles the bodies and sends them with the host's
// `fetch` and `credentials`, a five-minute time-out per request, V2's stream retries and the
// AbortSignal. V2 (streaming Responses with a `compaction_trigger` item) goes first when the
// model takes it; a V2 failure falls back to V1 (`…/responses/compact`). A failed lane leaves
// the session as it was.
import { nowOf } from '../core/args.js';
import { abortError, codedError, messageOf, statusOf } from '../core/errors.js';
import { committed, requireRaw } from '../core/raw.js';
import { Warnings } from '../formats/common.js';
import { write } from '../formats/openai-responses.js';

/** Time-out of one native request, body included (the reference: five minutes). */
const NATIVE_TIMEOUT_MS = 300_000;
const LANE_NAME = {
  v1: 'OpenAI remote compaction',
  v2: 'OpenAI V2 remote compaction',
  anthropic: 'Anthropic compaction',
};

/** JSON text of `v` (a BigInt is left out); E_INVALID_ARGUMENT for what has none (a cycle). */
function jsonOf(v, what) {
  try {
    return JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? undefined : x));
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
export function nativeLanes(o, tokens, planned = false) {
  const options = jsonOf({ model: o.model, provider: o.provider, contextWindow: o.contextWindow }, 'options.model');
  const t = typeof tokens === 'number' && Number.isFinite(tokens) ? tokens : undefined;
  const settings = o.settings === undefined ? undefined : jsonOf(o.settings, 'options.settings');
  return JSON.parse(requireRaw().nativeLanesJson(options, settings, t, planned));
}

/**
 * The requests of a `remote` plan for the lanes `t` (the core's `openai`): `{v2?, v1?,
 * retained}`, each `{url, headers, body}` (body as JSON text); undefined when there is nothing
 * to send. The input items are the openai-responses format's, written for a native lane.
 */
function buildRequests(plan, t, lanes, n) {
  // The previous native record, when it is this provider's (the core's choice).
  const {
    messages,
    previous,
    instructions: system,
  } = JSON.parse(plan._session().nativeMessagesJson(plan._raw(), t.provider));
  const prior = Array.isArray(previous?.replacementHistory) ? previous.replacementHistory : [];
  const native = { id: t.id, provider: t.provider, api: t.api, images: t.images, previous: prior };
  const input = write(messages, { warnings: new Warnings(), native }).messages;
  if (input.length === 0) return undefined;
  const instructions = n.instructions ?? system;
  const tools = Array.isArray(n.tools) && n.tools.length > 0 ? n.tools : undefined;
  // The core fits the input to the window and picks V2's retained messages (spec §13).
  const fitted = JSON.parse(
    requireRaw().nativeOpenaiInputsJson(
      JSON.stringify(input),
      typeof instructions === 'string' ? instructions : undefined,
      tools === undefined ? undefined : JSON.stringify(tools),
      t.contextWindow,
      t.retainedBudget,
    ),
  );
  const beta = t.codex ? { 'OpenAI-Beta': 'responses=experimental' } : {};
  const out = {};
  if (lanes.includes('v1')) {
    const body = { model: t.model, input: fitted.v1, instructions };
    out.v1 = { url: t.urls.v1, headers: { 'content-type': 'application/json', ...beta }, body: JSON.stringify(body) };
  }
  if (lanes.includes('v2')) {
    const body = {
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
 * One lane: POST, then commit the answer; a failure is sent again after the wait the core
 * gives (`nativeRetryMs`: V2 up to twice with back-off, V1 once for a 429/503 that says when).
 * A user abort is never retried.
 */
async function runLane(lane, request, ctx) {
  const { plan, requests, model, o, signal } = ctx;
  const base = o.native?.retryBaseMs;
  const retained = lane === 'v2' ? JSON.stringify(requests.retained) : undefined;
  for (let attempt = 0; ; attempt++) {
    try {
      const text = await post(request, lane, ctx);
      const raw = plan._session();
      return committed(raw.commitNative(plan._raw(), lane, model.provider, '', text, retained, nowOf(o)), raw);
    } catch (err) {
      if (signal.aborted) throw abortError();
      const wait = requireRaw().nativeRetryMs(
        lane,
        attempt,
        statusOf(err) ?? -1,
        messageOf(err),
        Number.isFinite(err?.retryAfterMs) ? err.retryAfterMs : -1,
        typeof base === 'number' ? base : -1,
      );
      if (wait < 0) throw err;
      await sleep(wait, signal);
    }
  }
}

/**
 * Runs the OpenAI native lanes on a `remote` plan: V2 first, V1 after a V2 failure. Resolves
 * the commit (`{entryId, tokensAfter, compactionEntry, fromExtension}`), or `undefined` when
 * no lane applies to `o.model` (or the plan has nothing to send). Rejects with `E_ABORTED`, or
 * with `E_SUMMARIZER` when every lane failed (`status`, `cause`, `lane`: the failure the core
 * reports, the first that was not an auth failure or, when every lane failed authentication,
 * the last); the session is unchanged then.
 */
export async function runOpenaiNative(plan, o, signal) {
  // The plan is the `remote` method's: remote compaction is on for it (spec §8.3).
  const { lanes, openai: model } = nativeLanes(o, undefined, true);
  if (model === null) return undefined;
  const n = o.native ?? {};
  const requests = buildRequests(plan, model, lanes, n);
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
  // Which failure is reported is the core's (a later auth failure never hides another).
  const first = failures[requireRaw().nativeReportedFailure(Float64Array.from(failures, (f) => statusOf(f.err) ?? -1))];
  const message = failures.map((f) => messageOf(f.err)).join('; ');
  const err = codedError('E_SUMMARIZER', `Provider-native compaction failed: ${message}`, {
    cause: first.err,
    status: statusOf(first.err),
  });
  err.lane = first.lane;
  throw err;
}
