// The async shell of compaction: `session.compact(options)`.
//
// The Rust core plans and commits (sans-IO) and decides retries (`retryStep`, spec: compaction
// §8.3); this module only awaits: the hooks (§8.8), the summarizer callbacks or the remote
// endpoint (§5.8, with the runtime's `fetch`), timers and the AbortSignal. The commit is the
// last step and the only one that writes, so any failure leaves the session as it was.
import { requireRaw } from './raw.js';

/** Time-out of one remote-endpoint request (spec: compaction §5.8). */
const REMOTE_TIMEOUT_MS = 180_000;

/** Sessions with a compaction in flight. */
const running = new WeakSet();

function coded(code, message) {
  const err = new Error(message);
  err.code = code;
  return err;
}

function abortError() {
  return coded('E_ABORTED', 'Compaction aborted: the signal was aborted; the session is unchanged');
}

/** Settles like `promise`, or rejects with the abort error as soon as `signal` aborts. */
function untilAbort(promise, signal) {
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
  const message = typeof err?.message === 'string' ? err.message : String(err ?? 'the summarizer failed');
  const status = Number.isFinite(err?.status) ? err.status : Number.isFinite(err?.statusCode) ? err.statusCode : -1;
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
      throw new Error(`Remote compaction failed: ${err?.message ?? err} (fetch failed)`);
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
      throw new Error(`Remote compaction returned invalid JSON: ${err?.message ?? err}`);
    }
    if (chat) {
      const content = data?.choices?.[0]?.message?.content;
      const text = Array.isArray(content) ? content.map((p) => (typeof p?.text === 'string' ? p.text : '')).join('') : content;
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
 * `{text}` or `{shrink: true}` (a history window overflowed the summarizer's context).
 */
async function summarizeOne(request, candidates, retryJson, signal, callOptions) {
  let last;
  for (let n = 0; n < candidates.length; n++) {
    const more = n + 1 < candidates.length;
    for (let attempt = 0; ; attempt++) {
      let text;
      let failure;
      try {
        text = await callCandidate(candidates[n], request, signal, callOptions);
      } catch (err) {
        failure = err;
      }
      if (signal.aborted) throw abortError();
      if (failure === undefined) {
        if (typeof text === 'string' && text.trim() !== '') return { text };
        failure = new Error('the summarizer returned an empty summary');
      }
      last = failureInfo(failure);
      const step = requireRaw().retryStep(attempt, last.message, last.status, last.retryAfterMs, more, retryJson);
      if (step.startsWith('wait:')) {
        await sleep(Number(step.slice(5)), signal);
        continue;
      }
      if (step === 'shrink' && request.window) return { shrink: true };
      if (step === 'next') break;
      throw new Error(last.message);
    }
  }
  throw new Error(last?.message ?? 'no summarizer: pass `summarize` or `remoteEndpoint`');
}

/** Hook handlers of `name`, in registration order (`hooks` is one object or an array). */
function handlers(hooks, name) {
  const list = Array.isArray(hooks) ? hooks : hooks ? [hooks] : [];
  return list.map((h) => h?.[name]).filter((f) => typeof f === 'function');
}

/** Calls a hook; a handler that throws or rejects is ignored (spec: compaction §8.8). */
async function callHook(f, payload, signal) {
  try {
    return await untilAbort(f(payload), signal);
  } catch (err) {
    if (signal.aborted) throw abortError();
    return undefined;
  }
}

function emit(hooks, event) {
  for (const f of handlers(hooks, 'onEvent')) {
    try {
      f(event);
    } catch {
      // Observers cannot stop a compaction.
    }
  }
}

function pick(options, keys) {
  const out = {};
  for (const k of keys) if (options[k] !== undefined) out[k] = options[k];
  return out;
}

async function run(session, o, signal) {
  const settings = o.settings;
  const planOptions = pick(o, ['customInstructions', 'contextWindow', 'provider', 'leafId']);
  const plans = [];
  const plan = (extra) => {
    const p = session.planCompaction(settings, { ...planOptions, ...extra });
    plans.push(p);
    return p;
  };
  try {
    const first = plan({});
    const preparation = first.preparation;

    // session_before_compact: cancel, or supply the compaction.
    for (const f of handlers(o.hooks, 'session_before_compact')) {
      const answer = await callHook(f, { preparation, customInstructions: o.customInstructions, signal }, signal);
      if (answer?.cancel === true) {
        throw coded('E_CANCELLED', 'Compaction cancelled by a session_before_compact hook');
      }
      if (answer?.compaction !== undefined && answer.compaction !== null) {
        return session.commitExtensionCompaction(first, answer.compaction);
      }
    }

    // session.compacting: context lines, a prompt override, preserveData.
    const extra = {};
    const context = [];
    for (const f of handlers(o.hooks, 'session.compacting')) {
      const answer = await callHook(f, { sessionId: session.header.id, preparation }, signal);
      if (Array.isArray(answer?.context)) context.push(...answer.context.filter((l) => typeof l === 'string'));
      if (typeof answer?.prompt === 'string') extra.promptOverride = answer.prompt;
      if (answer?.preserveData && typeof answer.preserveData === 'object') {
        extra.preserveData = { ...extra.preserveData, ...answer.preserveData };
      }
    }
    if (context.length) extra.extraContext = context;

    // The summarizers: the remote endpoint (when enabled), then the callbacks.
    const candidates = [];
    const endpoint = o.remoteEndpoint ?? settings?.remoteEndpoint;
    if (endpoint && settings?.remoteEnabled !== false) {
      candidates.push({ remote: { url: endpoint, headers: o.headers ?? {}, model: o.model } });
      extra.method = 'remote';
    }
    for (const f of [o.summarize].flat()) if (typeof f === 'function') candidates.push({ summarize: f });
    if (candidates.length === 0) {
      throw coded(
        'E_INVALID_ARGUMENT',
        'compact() needs `summarize` (a function returning a Promise of the summary text) or `remoteEndpoint`',
      );
    }
    const work = Object.keys(extra).length ? plan(extra) : first;
    const retryJson = o.retry === undefined ? undefined : JSON.stringify(o.retry);
    // Passed through to every summarize call (initiator override, session id, metadata).
    const callOptions = pick(o, ['initiator', 'sessionId', 'metadata']);
    const failed = (message) =>
      coded('E_SUMMARIZER', requireRaw().compactionErrorMessage(o.reason ?? 'manual', message));

    // Round by round; the requests of one round run in parallel.
    while (!work.isComplete) {
      const pending = work.pending;
      if (pending.length === 0) throw coded('E_SUMMARIZER', 'the plan is stuck without pending requests');
      const outcomes = await Promise.allSettled(pending.map((r) => summarizeOne(r, candidates, retryJson, signal, callOptions)));
      if (signal.aborted) throw abortError();
      outcomes.forEach((outcome, i) => {
        if (outcome.status === 'rejected') {
          const err = outcome.reason;
          throw err?.code ? err : failed(err?.message ?? String(err));
        }
        if (!outcome.value.shrink) {
          work.answer(pending[i].id, outcome.value.text);
          return;
        }
        try {
          work.retrySmaller(pending[i].id);
        } catch (err) {
          throw failed(err.message);
        }
      });
    }
    return session.commitCompaction(work);
  } finally {
    for (const p of plans) p.free();
  }
}

/**
 * Runs a whole compaction of `session` (see `CompactOptions` in the types). Rejects with a
 * coded Error; nothing is appended then.
 */
export async function compactSession(session, options) {
  const o = options ?? {};
  if (running.has(session)) throw coded('E_BUSY', 'Compaction already in progress');
  running.add(session);
  const signal = o.signal ?? new AbortController().signal;
  const reason = o.reason ?? 'manual';
  const auto = reason !== 'manual';
  if (auto) emit(o.hooks, { type: 'auto_compaction_start', reason, action: 'context-full' });
  try {
    if (signal.aborted) throw abortError();
    const committed = await run(session, o, signal);
    for (const f of handlers(o.hooks, 'session_compact')) await callHook(f, committed, signal).catch(() => {});
    if (auto) {
      emit(o.hooks, {
        type: 'auto_compaction_end',
        action: 'context-full',
        aborted: false,
        willRetry: Boolean(o.willRetry),
        result: committed,
      });
    }
    return committed;
  } catch (err) {
    if (auto) {
      emit(o.hooks, {
        type: 'auto_compaction_end',
        action: 'context-full',
        aborted: err?.code === 'E_ABORTED' || err?.code === 'E_CANCELLED',
        willRetry: false,
        errorMessage: err?.message,
      });
    }
    throw err;
  } finally {
    running.delete(session);
  }
}
