// The summarizer plumbing shared by the async shells (`compact.ts`, `navigate.ts`): calling a
// `summarize` callback or the remote endpoint (spec: compaction §5.8, with the runtime's
// `fetch`), retries as the Rust core decides them (`retryStep`, §8.3), hooks (§8.8), timers
// and the AbortSignal.
import { type Signal, untilAbort } from '../core/abort.js';
import { abortError, messageOf, statusOf, wrapError } from '../core/errors.js';
import { requireRaw } from '../core/raw.js';
import type { Summarize, SummarizeCallOptions, SummarizeContext, SummaryRequest } from '../core/session.js';

/** Time-out of one remote-endpoint request (spec: compaction §5.8). */
const REMOTE_TIMEOUT_MS = 180_000;

/** The member `key` of a thrown or host-given value, when it is an object (else undefined). */
export function memberOf(value: unknown, key: string): unknown {
  return value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined;
}

/** A finite number, else undefined. */
function finite(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** Resolves after `ms`, or rejects with the abort error as soon as `signal` aborts. */
export function sleep(ms: number, signal: Signal): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const done = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return untilAbort(done, signal).finally(() => clearTimeout(timer));
}

/** What retries need to know of a thrown value. */
function failureInfo(err: unknown): { message: string; status: number; retryAfterMs: number } {
  const message = messageOf(err, 'the summarizer failed');
  const status = statusOf(err) ?? -1;
  let retryAfterMs = -1;
  const ms = finite(memberOf(err, 'retryAfterMs'));
  const seconds = memberOf(err, 'retryAfter');
  if (ms !== undefined) retryAfterMs = Math.max(0, ms);
  else if (finite(seconds) !== undefined) retryAfterMs = Math.max(0, (seconds as number) * 1000);
  else if (typeof seconds === 'string') retryAfterMs = requireRaw().retryAfterMs(seconds, Date.now());
  return { message, status, retryAfterMs };
}

/** An Error of an HTTP request, with its `status` and the wait its `retry-after` asked for (-1: none). */
export function httpError(
  message: string,
  status: number,
  retryAfterMs = -1,
): Error & { status: number; retryAfterMs: number } {
  return Object.assign(new Error(message), { status, retryAfterMs });
}

/** The remote endpoint of a compaction or navigation: where to POST, its headers, the model id a chat endpoint gets. */
export interface RemoteEndpoint {
  url: string;
  headers: Record<string, string>;
  model?: string | undefined;
}

/** A summarizer candidate: the remote endpoint, or a host callback. */
export type Candidate = { remote: RemoteEndpoint } | { summarize: Summarize };

/** One POST to the remote endpoint, with its own 180 s time-out (spec: compaction §5.8). */
async function callRemote(remote: RemoteEndpoint, request: SummaryRequest, signal: Signal): Promise<string> {
  const chat = /\/chat\/completions\/?$/.test(new URL(remote.url).pathname);
  const body = chat
    ? {
        model: remote.model ?? '',
        messages: [
          { role: 'system', content: request.systemPrompt },
          { role: 'user', content: request.prompt },
        ],
        stream: false,
        max_tokens: request.maxTokens,
      }
    : { systemPrompt: request.systemPrompt, prompt: request.prompt, maxTokens: request.maxTokens };
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), REMOTE_TIMEOUT_MS);
  const forward = () => controller.abort();
  signal.addEventListener('abort', forward, { once: true });
  try {
    let res: Response;
    try {
      res = await fetch(remote.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...remote.headers },
        body: JSON.stringify(body),
        signal: controller.signal,
      });
    } catch (err) {
      if (signal.aborted) throw abortError();
      if (controller.signal.aborted) throw httpError('Remote compaction timed out after 180 s', 408);
      throw new Error(`Remote compaction failed: ${messageOf(err)} (fetch failed)`, { cause: err });
    }
    if (!res.ok) {
      const ra = res.headers.get('retry-after');
      throw httpError(
        `Remote compaction failed (${res.status} ${res.statusText})`,
        res.status,
        ra === null ? -1 : requireRaw().retryAfterMs(ra, Date.now()),
      );
    }
    let data: unknown;
    try {
      data = await res.json();
    } catch (err) {
      throw new Error(`Remote compaction returned invalid JSON: ${messageOf(err)}`, { cause: err });
    }
    if (chat) {
      const choices = memberOf(data, 'choices');
      const content = memberOf(memberOf(Array.isArray(choices) ? choices[0] : undefined, 'message'), 'content');
      const text = Array.isArray(content)
        ? content
            .map((p: unknown) => {
              const t = memberOf(p, 'text');
              return typeof t === 'string' ? t : '';
            })
            .join('')
        : content;
      if (typeof text !== 'string' || text === '') {
        throw new Error('Remote compaction response missing choices[0].message.content');
      }
      return text;
    }
    const summary = memberOf(data, 'summary');
    if (typeof summary !== 'string') throw new Error('Remote compaction response missing summary');
    return summary;
  } finally {
    clearTimeout(timer);
    signal.removeEventListener?.('abort', forward);
  }
}

async function callCandidate(
  candidate: Candidate,
  request: SummaryRequest,
  signal: Signal,
  callOptions: SummarizeCallOptions,
): Promise<string> {
  if ('remote' in candidate) return callRemote(candidate.remote, request, signal);
  // The tag of the request's purpose is the core's (spec: compaction §5.3).
  const telemetryTag = requireRaw().telemetryTag(request.purpose) as SummarizeContext['telemetryTag'];
  // A real AbortSignal (the caller's may be any AbortSignalLike), so the host can pass it to fetch.
  const own = signal instanceof AbortSignal ? undefined : new AbortController();
  const forward = () => own?.abort();
  if (own !== undefined) {
    if (signal.aborted) own.abort();
    else signal.addEventListener('abort', forward, { once: true });
  }
  const context = { ...callOptions, telemetryTag, signal: own?.signal ?? (signal as AbortSignal) };
  let answer: unknown;
  try {
    answer = await untilAbort(candidate.summarize({ ...request }, context), signal);
  } finally {
    if (own !== undefined) signal.removeEventListener?.('abort', forward);
  }
  if (typeof answer === 'string') return answer;
  const summary = memberOf(answer, 'summary');
  if (typeof summary === 'string') return summary;
  throw new Error('the summarizer returned neither a string nor {summary}');
}

/** The plumbing of the summarize calls of one operation. */
export interface SummarizeCalls {
  signal: Signal;
  /** The `retry` option as JSON text (undefined: the defaults). */
  retryJson: string | undefined;
  /** Passed through to every summarize call (initiator override, session id, metadata). */
  callOptions: SummarizeCallOptions;
  /** A failure's message as the operation's error says it. */
  wording: (message: string) => string;
}

/**
 * Answers one request: candidates in order, each retried as the core decides. Resolves to
 * `{text}` or `{shrink: true}` (a history window overflowed the summarizer's context). When
 * every candidate failed it rejects with `E_SUMMARIZER`: the message is the last failure's
 * worded by `wording` (the caller says what failed), `cause` the value the summarizer threw
 * (for the remote endpoint: an Error with the HTTP `status`), `status` its HTTP status.
 * `calls` holds the `signal`, the `retryJson` settings and the `callOptions` of every call.
 */
export async function summarizeOne(
  request: SummaryRequest,
  candidates: readonly Candidate[],
  calls: SummarizeCalls,
): Promise<{ text: string; shrink?: undefined } | { shrink: true; text?: undefined }> {
  const { signal, retryJson, callOptions, wording } = calls;
  let last: { message: string; status: number; retryAfterMs: number; thrown: unknown } | undefined;
  for (let n = 0; n < candidates.length; n++) {
    const candidate = candidates[n];
    if (candidate === undefined) continue;
    const more = n + 1 < candidates.length;
    for (let attempt = 0; ; attempt++) {
      let text: string | undefined;
      let thrown: unknown;
      let failure: unknown;
      try {
        text = await callCandidate(candidate, request, signal, callOptions);
      } catch (err) {
        thrown = err;
        failure = err;
      }
      if (signal.aborted) throw abortError();
      if (failure === undefined && text !== undefined) {
        // An empty answer, or one far over maxTokens, is a failed call too (the core decides).
        const problem = requireRaw().answerProblem(text, request.maxTokens);
        if (problem === '') return { text };
        failure = new Error(problem);
      }
      last = { ...failureInfo(failure), thrown };
      // Only a history window can be planned smaller: the core gives up on the others.
      const shrinkable = request.window !== undefined && request.window !== null;
      const step: { action: string; ms?: number } = JSON.parse(
        requireRaw().retryStep(attempt, last.message, last.status, last.retryAfterMs, more, retryJson, shrinkable),
      );
      if (step.action === 'wait') {
        await sleep(step.ms ?? 0, signal);
        continue;
      }
      if (step.action === 'shrink') return { shrink: true };
      if (step.action === 'next') break;
      throw wrapError('E_SUMMARIZER', wording(last.message), thrown);
    }
  }
  const message = last?.message ?? 'no summarizer: pass `summarize` or `remoteEndpoint`';
  throw wrapError('E_SUMMARIZER', wording(message), last?.thrown);
}

/** A hook handler, of any hook: called with its payload, its answer read by the caller. */
type Handler = (payload: never) => unknown;

/** Hook handlers of `name`, in registration order (`hooks` is one object or an array). */
export function handlers<H extends object, K extends keyof H>(
  hooks: H | readonly H[] | undefined,
  name: K,
): Array<Extract<NonNullable<H[K]>, Handler>> {
  const list: readonly H[] = Array.isArray(hooks) ? hooks : hooks ? [hooks as H] : [];
  return list.map((h) => h?.[name]).filter((f): f is Extract<NonNullable<H[K]>, Handler> => typeof f === 'function');
}

/** Calls a hook; a handler that throws or rejects is ignored (spec: compaction §8.8). */
export async function callHook<P, R>(
  f: (payload: P) => R,
  payload: P,
  signal: Signal,
): Promise<Awaited<R> | undefined> {
  try {
    return await untilAbort(f(payload), signal);
  } catch (_err) {
    if (signal.aborted) throw abortError();
    return undefined;
  }
}

/** The members of `options` named in `keys` that are set. */
export function pick<T extends object, K extends keyof T>(options: T, keys: readonly K[]): Partial<Pick<T, K>> {
  const out: Partial<Pick<T, K>> = {};
  for (const k of keys) if (options[k] !== undefined) out[k] = options[k];
  return out;
}

/** `T` with its members that may be undefined made optional instead (`exactOptionalPropertyTypes`). */
export type Defined<T> = { [K in keyof T as undefined extends T[K] ? never : K]: T[K] } & {
  [K in keyof T as undefined extends T[K] ? K : never]?: Exclude<T[K], undefined>;
};

/**
 * `o` without its undefined members: an option the caller did not set is absent, not present
 * as undefined (the core reads options as JSON, where both are the same).
 */
export function defined<T extends object>(o: T): Defined<T> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v;
  return out as Defined<T>;
}
