// The async shell of the provider-native lanes of the `remote` method (spec: compaction §5.7
// step 1, §13): the OpenAI lanes (V2 first when the model takes it, V1 after a V2 failure) and
// Anthropic server compaction. The requests are the providers' (providers/native-*.ts); this
// module sends them with the host's `fetch` and `credentials`, a time-out per request, the
// retries the core paces (`nativeRetryMs`, `retryStep`) and the AbortSignal, then hands the
// answer to the core's commit. A failed lane leaves the session as it was.

import { type Signal, untilAbort } from '../core/abort.js';
import { nowOf } from '../core/args.js';
import { abortError, codedError, messageOf, statusOf } from '../core/errors.js';
import { committed, requireRaw } from '../core/raw.js';
import type { CompactionCommit, CompactOptions, RetryOptions } from '../core/session.js';
import {
  ANTHROPIC_API,
  ANTHROPIC_TIMEOUT_MS,
  anthropicOndemandRequest,
  anthropicRequest,
  ondemandLive,
} from '../providers/native-anthropic.js';
import {
  LANE_NAME,
  type LaneRequest,
  NATIVE_TIMEOUT_MS,
  type NativeLane,
  type NativeModelOptions,
  type NativePlan,
  type NativeRequestOptions,
  nativeLanes,
  type OpenaiRequests,
  openaiRequests,
} from '../providers/native-openai.js';
import { httpError, memberOf, sleep } from './summarizer.js';

/** What the lanes read of the options of a compaction. */
export interface NativeRunOptions extends NativeModelOptions {
  headers?: Record<string, string> | undefined;
  credentials?: CompactOptions['credentials'] | undefined;
  fetch?: CompactOptions['fetch'] | undefined;
  native?: NativeRequestOptions | undefined;
  retry?: RetryOptions | undefined;
  now?: number | undefined;
}

/** One POST's context: the options, the lane's model (for `credentials`), the signal, the time-out. */
interface PostContext {
  o: NativeRunOptions;
  model: { provider: string; api: string };
  signal: Signal;
  timeoutMs: number;
}

/** The wait a failed request's `retry-after` asked for (-1: none). */
function retryAfterOf(err: unknown): number {
  const ms = memberOf(err, 'retryAfterMs');
  return typeof ms === 'number' && Number.isFinite(ms) ? ms : -1;
}

/** The stable code of a thrown value, if it has one. */
function codeOf(err: unknown): unknown {
  return memberOf(err, 'code');
}

/**
 * One POST of `request` (`{url, headers, body}`) for `lane` (`v1`, `v2`, `anthropic`),
 * resolving the whole answer text; `ctx`: `{o, model: {provider, api}, signal, timeoutMs}`.
 * Shared by every provider-native lane.
 */
async function post(request: LaneRequest, lane: NativeLane, ctx: PostContext): Promise<string> {
  const { o, model, signal, timeoutMs } = ctx;
  const headers: Record<string, string> = { ...request.headers, ...o.headers };
  if (typeof o.credentials === 'function') {
    const extra: unknown = await untilAbort(
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
    signal.removeEventListener?.('abort', forward);
  }
}

/** The context of the OpenAI lanes of one plan. */
interface LaneContext extends PostContext {
  plan: NativePlan;
  requests: OpenaiRequests;
}

/**
 * One lane: POST, then commit the answer; a failure is sent again after the wait the core
 * gives (`nativeRetryMs`: V2 up to twice with back-off, V1 once for a 429/503 that says when).
 * A user abort is never retried.
 */
async function runLane(lane: 'v1' | 'v2', request: LaneRequest, ctx: LaneContext): Promise<CompactionCommit> {
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
        retryAfterOf(err),
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
export async function runOpenaiNative(
  plan: NativePlan,
  o: NativeRunOptions,
  signal: Signal,
): Promise<CompactionCommit | undefined> {
  // The plan is the `remote` method's: remote compaction is on for it (spec §8.3).
  const { lanes, openai: model } = nativeLanes(o, undefined, true);
  if (model === null) return undefined;
  const n = o.native ?? {};
  const requests = openaiRequests(plan, model, lanes, n);
  if (requests === undefined) return undefined;
  const ctx: LaneContext = { plan, requests, o, model, signal, timeoutMs: n.timeoutMs ?? NATIVE_TIMEOUT_MS };
  const failures: Array<{ lane: 'v1' | 'v2'; err: unknown }> = [];
  for (const lane of lanes) {
    const request = requests[lane];
    if (request === undefined) continue;
    try {
      return await runLane(lane, request, ctx);
    } catch (err) {
      if (signal.aborted || codeOf(err) === 'E_ABORTED') throw abortError();
      failures.push({ lane, err });
    }
  }
  if (failures.length === 0) return undefined;
  // Which failure is reported is the core's (a later auth failure never hides another).
  const reported = requireRaw().nativeReportedFailure(Float64Array.from(failures, (f) => statusOf(f.err) ?? -1));
  const first = failures[reported] ?? failures[0];
  if (first === undefined) return undefined;
  const message = failures.map((f) => messageOf(f.err)).join('; ');
  const err = codedError('E_SUMMARIZER', `Provider-native compaction failed: ${message}`, {
    cause: first.err,
    status: statusOf(first.err),
  });
  throw Object.assign(err, { lane: first.lane });
}

/**
 * Runs Anthropic server compaction on `plan` (a `remote` plan) and resolves the commit, or
 * undefined when no Anthropic lane applies to `o.model` at the plan's `tokensBefore`. The
 * lanes are the core's, in order (`anthropicLanes`): on-demand compaction where the model has
 * it, then the threshold lane; a failed lane falls back to the next. Rejects with `E_ABORTED`
 * (never retried), `E_STALE_PLAN` (the session moved off the plan's path), or `E_SUMMARIZER`
 * (with `status` for an HTTP failure; the response the core could not use) when every lane
 * failed.
 */
export async function runAnthropic(
  plan: NativePlan,
  o: NativeRunOptions,
  signal: Signal,
): Promise<CompactionCommit | undefined> {
  const lanes = nativeLanes(o, plan.preparation.tokensBefore);
  if (lanes.anthropic !== null || lanes.claude === null) return undefined;
  const m = lanes.claude;
  const ctx: PostContext = {
    o,
    model: { provider: m.provider ?? '', api: ANTHROPIC_API },
    signal,
    timeoutMs: o.native?.timeoutMs ?? ANTHROPIC_TIMEOUT_MS,
  };
  const failures: unknown[] = [];
  const live = ondemandLive(o.native);
  for (const name of lanes.anthropicLanes) {
    const lane: NativeLane = name === 'ondemand' ? 'anthropic-ondemand' : 'anthropic';
    const request = name === 'ondemand' ? anthropicOndemandRequest(plan, m, live) : anthropicRequest(plan, m);
    if (request === undefined) continue;
    // The core weighs the kept turns' thinking by whether the request carried the host's
    // system prompt and tools.
    const commitAs = lane === 'anthropic-ondemand' && live !== undefined ? 'anthropic-ondemand-live' : lane;
    try {
      return await runAnthropicLane(plan, lane, commitAs, request, ctx, m.id);
    } catch (err) {
      if (signal.aborted || codeOf(err) === 'E_ABORTED') throw abortError();
      // A session that moved off the plan's path is stale for every lane.
      if (codeOf(err) === 'E_STALE_PLAN') throw err;
      failures.push(err);
    }
  }
  const last = failures.at(-1);
  if (last === undefined) return undefined;
  if (failures.length === 1) throw last;
  const message = failures.map((f) => messageOf(f)).join('; ');
  throw codedError('E_SUMMARIZER', message, { cause: last, status: statusOf(last) });
}

/**
 * One Anthropic lane: POST `request`, waiting out a failure as the core's `retryStep` decides,
 * then the core's commit of the answer (`commitNative` as `commitAs`, for model `modelId`). Rejects with `E_ABORTED`,
 * `E_SUMMARIZER` (with `status` for an HTTP failure) or the commit's own code.
 */
async function runAnthropicLane(
  plan: NativePlan,
  lane: NativeLane,
  commitAs: string,
  request: LaneRequest,
  ctx: PostContext,
  modelId: string,
): Promise<CompactionCommit> {
  const { o, signal } = ctx;
  const m = ctx.model;
  const retryJson = o.retry === undefined ? undefined : JSON.stringify(o.retry);
  for (let attempt = 0; ; attempt++) {
    if (signal.aborted) throw abortError();
    let text: string;
    try {
      text = await post(request, lane, ctx);
    } catch (err) {
      if (signal.aborted || codeOf(err) === 'E_ABORTED') throw abortError();
      const status = statusOf(err) ?? -1;
      const step: { action: string; ms?: number } = JSON.parse(
        requireRaw().retryStep(attempt, messageOf(err), status, retryAfterOf(err), false, retryJson),
      );
      if (step.action === 'wait') {
        await sleep(step.ms ?? 0, signal);
        continue;
      }
      throw codedError('E_SUMMARIZER', messageOf(err), { cause: err, status: status >= 0 ? status : undefined });
    }
    const raw = plan._session();
    return committed(raw.commitNative(plan._raw(), commitAs, m.provider, modelId, text, undefined, nowOf(o)), raw);
  }
}
