// The summarizer plumbing shared by the async shells (`compact.js`, `navigate.js`): calling a
// `summarize` callback or the remote endpoint (spec: compaction §5.8, with the runtime's
// `fetch`), retries as the Rust core decides them (`retryStep`, §8.3), hooks (§8.8), timers
// and the AbortSignal.
import { abortError, messageOf, statusOf, wrapError } from '../core/errors.js';
import { requireRaw } from '../core/raw.js';

/** Time-out of one remote-endpoint request (spec: compaction §5.8). */
const REMOTE_TIMEOUT_MS = 180_000;

/** Settles like `promise`, or rejects with the abort error as soon as `signal` aborts. */
export function untilAbort(promise, signal) {
  if (signal.aborted) return Promise.reject(abortError());
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(abortError());
    signal.addEventListener('abort', onAbort, { once: true });
    Promise.resolve(promise).then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e) => {
        signal.removeEventListener('abort', onAbort);
        reject(e);
      },
    );
  });
}

function sleep(ms, signal) {
  let timer;
  const done = new Promise((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return untilAbort(done, signal).finally(() => clearTimeout(timer));
}

/** What retries need to know of a thrown value. */
function failureInfo(err) {
  const message = messageOf(err, 'the summarizer failed');
  const status = statusOf(err) ?? -1;
  let retryAfterMs = -1;
  if (Number.isFinite(err?.retryAfterMs)) retryAfterMs = Math.max(0, err.retryAfterMs);
  else if (Number.isFinite(err?.retryAfter)) retryAfterMs = Math.max(0, err.retryAfter * 1000);
  else if (typeof err?.retryAfter === 'string') retryAfterMs = requireRaw().retryAfterMs(err.retryAfter, Date.now());
  return { message, status, retryAfterMs };
}

function httpError(message, status, retryAfterMs = -1) {
  return Object.assign(new Error(message), { status, retryAfterMs });
}

/** One POST to the remote endpoint, with its own 180 s time-out (spec: compaction §5.8). */
async function callRemote(remote, request, signal) {
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
    let res;
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
    let data;
    try {
      data = await res.json();
    } catch (err) {
      throw new Error(`Remote compaction returned invalid JSON: ${messageOf(err)}`, { cause: err });
    }
    if (chat) {
      const content = data?.choices?.[0]?.message?.content;
      const text = Array.isArray(content)
        ? content.map((p) => (typeof p?.text === 'string' ? p.text : '')).join('')
        : content;
      if (typeof text !== 'string' || text === '') {
        throw new Error('Remote compaction response missing choices[0].message.content');
      }
      return text;
    }
    if (typeof data?.summary !== 'string') throw new Error('Remote compaction response missing summary');
    return data.summary;
  } finally {
    clearTimeout(timer);
    signal.removeEventListener('abort', forward);
  }
}

/** The telemetry tag of each request purpose (spec: compaction §5.3 request options). */
const TELEMETRY_TAGS = {
  history: 'compaction_summary',
  'turn-prefix': 'compaction_turn_prefix',
  'short-summary': 'compaction_short_summary',
  handoff: 'handoff',
  'branch-summary': 'branch_summary',
};

async function callCandidate(candidate, request, signal, callOptions) {
  if (candidate.remote) return callRemote(candidate.remote, request, signal);
  const context = { ...callOptions, telemetryTag: TELEMETRY_TAGS[request.purpose], signal };
  const answer = await untilAbort(candidate.summarize({ ...request }, context), signal);
  if (typeof answer === 'string') return answer;
  if (typeof answer?.summary === 'string') return answer.summary;
  throw new Error('the summarizer returned neither a string nor {summary}');
}

/**
 * Answers one request: candidates in order, each retried as the core decides. Resolves to
 * `{text}` or `{shrink: true}` (a history window overflowed the summarizer's context). When
 * every candidate failed it rejects with `E_SUMMARIZER`: the message is the last failure's
 * worded by `wording` (the caller says what failed), `cause` the value the summarizer threw
 * (for the remote endpoint: an Error with the HTTP `status`), `status` its HTTP status.
 * `calls` holds the `signal`, the `retryJson` settings and the `callOptions` of every call.
 */
export async function summarizeOne(request, candidates, calls) {
  const { signal, retryJson, callOptions, wording } = calls;
  let last;
  for (let n = 0; n < candidates.length; n++) {
    const more = n + 1 < candidates.length;
    for (let attempt = 0; ; attempt++) {
      let text;
      let thrown;
      let failure;
      try {
        text = await callCandidate(candidates[n], request, signal, callOptions);
      } catch (err) {
        thrown = err;
        failure = err;
      }
      if (signal.aborted) throw abortError();
      if (failure === undefined) {
        // An empty answer, or one far over maxTokens, is a failed call too (the core decides).
        const problem = requireRaw().answerProblem(text, request.maxTokens);
        if (problem === '') return { text };
        failure = new Error(problem);
      }
      last = { ...failureInfo(failure), thrown };
      const step = JSON.parse(
        requireRaw().retryStep(attempt, last.message, last.status, last.retryAfterMs, more, retryJson),
      );
      if (step.action === 'wait') {
        await sleep(step.ms, signal);
        continue;
      }
      if (step.action === 'shrink' && request.window) return { shrink: true };
      if (step.action === 'next') break;
      throw wrapError('E_SUMMARIZER', wording(last.message), thrown);
    }
  }
  const message = last?.message ?? 'no summarizer: pass `summarize` or `remoteEndpoint`';
  throw wrapError('E_SUMMARIZER', wording(message), last?.thrown);
}

/** Hook handlers of `name`, in registration order (`hooks` is one object or an array). */
export function handlers(hooks, name) {
  const list = Array.isArray(hooks) ? hooks : hooks ? [hooks] : [];
  return list.map((h) => h?.[name]).filter((f) => typeof f === 'function');
}

/** Calls a hook; a handler that throws or rejects is ignored (spec: compaction §8.8). */
export async function callHook(f, payload, signal) {
  try {
    return await untilAbort(f(payload), signal);
  } catch (_err) {
    if (signal.aborted) throw abortError();
    return undefined;
  }
}

/** The members of `options` named in `keys` that are set. */
export function pick(options, keys) {
  const out = {};
  for (const k of keys) if (options[k] !== undefined) out[k] = options[k];
  return out;
}
