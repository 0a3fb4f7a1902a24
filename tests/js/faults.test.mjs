// Faults in the async shell (issue 9): what `compact()` and `navigateTree()` do when the
// summarizer throws, rejects, hangs, answers nothing or far too much, when the remote endpoint
// (a real HTTP server on 127.0.0.1) fails in every way, and when hooks throw. Each case checks
// the error `code` and that the session's bytes are exactly the loaded bytes unless the
// operation succeeded.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { BRANCHED_TEXT, loadBranched } from './support/sessions.mjs';

/** Six turns of about 100 tokens each (the last one short), then a branch off the first. */
const BYTES = new TextEncoder().encode(BRANCHED_TEXT);
const settings = { keepRecentTokens: 10 };
const retry = { baseDelayMs: 1, maxRetries: 1 };

/** A fresh session, loaded from the bytes, with its leaf at the end of the main branch (a5). */
const load = () => loadBranched(BYTES);

function assertUnchanged(s, what) {
  assert.deepEqual(Buffer.from(s.toBytes()), Buffer.from(BYTES), `${what}: the session's bytes changed`);
  assert.equal(s.leafId, 'a5', `${what}: the leaf moved`);
}

async function rejectsWith(promise, code, pattern) {
  await assert.rejects(promise, (err) => {
    assert.ok(err instanceof Error, 'an Error');
    assert.equal(err.code, code, err.message);
    if (pattern) assert.match(err.message, pattern);
    return true;
  });
}

let server;
let url;
let behaviour = () => ({ status: 200, body: { summary: 'remote summary' } });
let requests = 0;

before(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      requests += 1;
      const reply = behaviour(requests);
      if (reply.hang) return;
      if (reply.destroy) {
        req.socket.destroy();
        return;
      }
      res.writeHead(reply.status, { 'content-type': 'application/json', ...(reply.headers ?? {}) });
      res.end(typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body));
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${server.address().port}/summarize`;
});

after(() => {
  server.closeAllConnections();
  server.close();
});

/** Runs `fn` with the server answering through `b`; returns the number of requests it got. */
async function withServer(b, fn) {
  behaviour = b;
  requests = 0;
  await fn();
  return requests;
}

// ---- compact(): the summarizer callback ------------------------------------------------------

test('compact: a summarizer that throws → E_SUMMARIZER, session unchanged', async () => {
  const s = load();
  let calls = 0;
  const summarize = () => {
    calls += 1;
    throw new Error('model exploded');
  };
  await rejectsWith(s.compact({ settings, retry, summarize }), 'E_SUMMARIZER', /model exploded/);
  assert.equal(calls, 1, 'not a transient failure: no retry');
  assertUnchanged(s, 'throw');
});

test('compact: a summarizer that rejects (also with a non-Error) → E_SUMMARIZER, unchanged', async () => {
  const s = load();
  await rejectsWith(
    s.compact({ settings, retry, summarize: async () => Promise.reject(new Error('bad request')) }),
    'E_SUMMARIZER',
    /bad request/,
  );
  await rejectsWith(
    s.compact({ settings, retry, summarize: async () => Promise.reject('a string') }),
    'E_SUMMARIZER',
    /a string/,
  );
  await rejectsWith(s.compact({ settings, retry, summarize: async () => Promise.reject(undefined) }), 'E_SUMMARIZER');
  assertUnchanged(s, 'reject');
});

test('compact: a hanging summarizer is aborted through the AbortSignal → E_ABORTED, unchanged', async () => {
  const s = load();
  const controller = new AbortController();
  let seen;
  const pending = s.compact({
    settings,
    signal: controller.signal,
    summarize: (_request, { signal }) => {
      seen = signal;
      return new Promise(() => {});
    },
  });
  setTimeout(() => controller.abort(), 20);
  const t0 = Date.now();
  await rejectsWith(pending, 'E_ABORTED', /aborted/);
  assert.ok(Date.now() - t0 < 5_000, 'settles at once on abort');
  assert.equal(seen?.aborted, true, 'the summarizer got the aborted signal');
  assertUnchanged(s, 'abort');
  // The session is free again: a later compaction runs.
  const ok = await s.compact({ settings, summarize: async () => 'fine' });
  assert.equal(s.size, 15);
  assert.equal(s.entry(ok.entryId).type, 'compaction');
});

test('compact: an empty or blank summary → E_SUMMARIZER, unchanged', async () => {
  const s = load();
  for (const answer of ['', '   \n\t', { summary: '' }]) {
    await rejectsWith(s.compact({ settings, retry, summarize: async () => answer }), 'E_SUMMARIZER', /empty summary/);
  }
  await rejectsWith(s.compact({ settings, retry, summarize: async () => 42 }), 'E_SUMMARIZER', /neither a string/);
  assertUnchanged(s, 'empty');
});

test('compact: an empty summary is a transient failure, retried as a 503 is', async () => {
  const s = load();
  let calls = 0;
  // Blank once, then a summary: the retry answers (before, the empty answer ended the call).
  const summarize = async () => (++calls === 1 ? ' ' : 'fine');
  const out = await s.compact({ settings, retry: { baseDelayMs: 1, maxRetries: 2 }, summarize });
  assert.equal(s.entry(out.entryId).type, 'compaction');
  assert.ok(calls >= 2, `the summarizer was called again (${calls} calls)`);
});

test('compact: a 10 MB summary → E_SUMMARIZER (far over maxTokens), unchanged', async () => {
  const s = load();
  const huge = 'lorem ipsum '.repeat(900_000); // 10.8 MB
  let maxTokens;
  const summarize = async (request) => {
    maxTokens ??= request.maxTokens;
    return huge;
  };
  await rejectsWith(s.compact({ settings, retry, summarize }), 'E_SUMMARIZER', /maxTokens/);
  assert.ok(maxTokens > 0);
  assertUnchanged(s, '10 MB');
  // With a second candidate, the oversized answer moves on to it.
  const r = await s.compact({ settings, retry, summarize: [summarize, async () => 'a normal summary'] });
  assert.match(s.entry(r.entryId).summary, /a normal summary/);
  assert.ok(r.tokensAfter < r.compactionEntry.tokensBefore || r.compactionEntry.tokensBefore === 0);
});

// ---- compact(): the remote endpoint -------------------------------------------------------------

test('remote: 500 → retried, then E_SUMMARIZER with the status, unchanged', async () => {
  const s = load();
  const n = await withServer(
    () => ({ status: 500, body: { error: 'boom' } }),
    () => rejectsWith(s.compact({ settings, retry, remoteEndpoint: url }), 'E_SUMMARIZER', /500 Internal Server Error/),
  );
  assert.equal(n, 2, 'one retry (maxRetries 1)');
  assertUnchanged(s, '500');
});

test('remote: 429 with retry-after is waited for, then succeeds; always 429 → E_SUMMARIZER', async () => {
  const s = load();
  const t0 = Date.now();
  let r;
  const n = await withServer(
    (i) =>
      i === 1
        ? { status: 429, headers: { 'retry-after': '1' }, body: { error: 'slow down' } }
        : { status: 200, body: { summary: 'after the wait' } },
    async () => {
      r = await s.compact({ settings, retry: { maxRetries: 2, baseDelayMs: 1 }, remoteEndpoint: url });
    },
  );
  assert.ok(n >= 2, `${n} requests`);
  assert.ok(Date.now() - t0 >= 900, `waited ${Date.now() - t0} ms for retry-after: 1`);
  assert.match(s.entry(r.entryId).summary, /after the wait/);

  const s2 = load();
  const m = await withServer(
    () => ({ status: 429, headers: { 'retry-after': '0' }, body: {} }),
    () => rejectsWith(s2.compact({ settings, retry, remoteEndpoint: url }), 'E_SUMMARIZER', /429/),
  );
  assert.equal(m, 2);
  assertUnchanged(s2, '429');
});

test('remote: invalid JSON, a body without summary, a wrong type → E_SUMMARIZER, unchanged', async () => {
  const s = load();
  await withServer(
    () => ({ status: 200, body: '{"summary": "cut off' }),
    () => rejectsWith(s.compact({ settings, retry, remoteEndpoint: url }), 'E_SUMMARIZER', /invalid JSON/),
  );
  await withServer(
    () => ({ status: 200, body: { text: 'wrong field' } }),
    () => rejectsWith(s.compact({ settings, retry, remoteEndpoint: url }), 'E_SUMMARIZER', /missing summary/),
  );
  await withServer(
    () => ({ status: 200, body: { summary: 7 } }),
    () => rejectsWith(s.compact({ settings, retry, remoteEndpoint: url }), 'E_SUMMARIZER', /missing summary/),
  );
  await withServer(
    () => ({ status: 200, body: { summary: '' } }),
    () => rejectsWith(s.compact({ settings, retry, remoteEndpoint: url }), 'E_SUMMARIZER', /empty summary/),
  );
  assertUnchanged(s, 'bad bodies');
});

test('remote: the server closes the connection → E_SUMMARIZER, unchanged', async () => {
  const s = load();
  const n = await withServer(
    () => ({ destroy: true }),
    () => rejectsWith(s.compact({ settings, retry, remoteEndpoint: url }), 'E_SUMMARIZER', /fetch failed/),
  );
  assert.equal(n, 2, 'a dropped connection is transient: one retry (maxRetries 1)');
  // Nothing listens any more on a port: the same.
  const dead = http.createServer();
  await new Promise((r) => dead.listen(0, '127.0.0.1', r));
  const port = dead.address().port;
  await new Promise((r) => dead.close(r));
  await rejectsWith(
    s.compact({ settings, retry, remoteEndpoint: `http://127.0.0.1:${port}/x` }),
    'E_SUMMARIZER',
    /fetch failed/,
  );
  assertUnchanged(s, 'closed');
});

test('remote: a hanging endpoint is aborted → E_ABORTED, unchanged', async () => {
  const s = load();
  const controller = new AbortController();
  await withServer(
    () => ({ hang: true }),
    async () => {
      const pending = s.compact({ settings, signal: controller.signal, remoteEndpoint: url });
      setTimeout(() => controller.abort(), 30);
      await rejectsWith(pending, 'E_ABORTED');
    },
  );
  assertUnchanged(s, 'remote abort');
});

test('remote: a 10 MB summary → E_SUMMARIZER, unchanged', async () => {
  const s = load();
  await withServer(
    () => ({ status: 200, body: { summary: 'x'.repeat(10 << 20) } }),
    () => rejectsWith(s.compact({ settings, retry, remoteEndpoint: url }), 'E_SUMMARIZER', /maxTokens/),
  );
  assertUnchanged(s, 'remote 10 MB');
});

// ---- hooks ----------------------------------------------------------------------------------------

test('hooks that throw or reject are ignored: the compaction succeeds', async () => {
  const s = load();
  const boom = () => {
    throw new Error('hook bug');
  };
  const r = await s.compact({
    settings,
    reason: 'threshold',
    summarize: async () => 'summary despite the hooks',
    hooks: {
      session_before_compact: boom,
      'session.compacting': async () => Promise.reject(new Error('async hook bug')),
      session_compact: boom,
      onEvent: boom,
    },
  });
  assert.equal(s.size, 15, 'one entry appended');
  assert.equal(s.leafId, r.entryId);
  assert.match(s.entry(r.entryId).summary, /summary despite the hooks/);
});

test('a hook that hangs is aborted → E_ABORTED, unchanged', async () => {
  const s = load();
  const controller = new AbortController();
  const pending = s.compact({
    settings,
    signal: controller.signal,
    summarize: async () => 'never asked',
    hooks: { session_before_compact: () => new Promise(() => {}) },
  });
  setTimeout(() => controller.abort(), 20);
  await rejectsWith(pending, 'E_ABORTED');
  assertUnchanged(s, 'hanging hook');
});

// ---- navigateTree() ---------------------------------------------------------------------------------

test('navigate: a summarizer that throws or rejects → E_SUMMARIZER, session unchanged', async () => {
  const s = load();
  for (const summarize of [
    () => {
      throw new Error('nav exploded');
    },
    async () => Promise.reject(new Error('nav rejected')),
  ]) {
    await rejectsWith(s.navigateTree('a9', { summarize, retry }), 'E_SUMMARIZER', /nav (exploded|rejected)/);
  }
  assertUnchanged(s, 'navigate throw');
});

test('navigate: a hanging summarizer aborted → {cancelled, aborted}, unchanged', async () => {
  const s = load();
  const controller = new AbortController();
  const pending = s.navigateTree('a9', { signal: controller.signal, summarize: () => new Promise(() => {}) });
  setTimeout(() => controller.abort(), 20);
  assert.deepEqual(await pending, { cancelled: true, aborted: true });
  assertUnchanged(s, 'navigate abort');
});

test('navigate: an empty summary → E_SUMMARIZER; a 10 MB one → E_SUMMARIZER; unchanged', async () => {
  const s = load();
  await rejectsWith(s.navigateTree('a9', { retry, summarize: async () => ' ' }), 'E_SUMMARIZER', /empty summary/);
  await rejectsWith(
    s.navigateTree('a9', { retry, summarize: async () => ({ summary: '' }) }),
    'E_SUMMARIZER',
    /empty summary/,
  );
  await rejectsWith(s.navigateTree('a9', { retry, summarize: async () => 42 }), 'E_SUMMARIZER', /neither a string/);
  await rejectsWith(
    s.navigateTree('a9', { retry, summarize: async () => 'y'.repeat(10 << 20) }),
    'E_SUMMARIZER',
    /maxTokens/,
  );
  assertUnchanged(s, 'navigate empty/huge');
  // With a second summarizer, the oversized answer moves on to it.
  const r = await s.navigateTree('a9', {
    retry,
    summarize: [async () => 'y'.repeat(10 << 20), async () => 'short and fine'],
  });
  assert.match(s.entry(r.summaryEntryId).summary, /short and fine/);
});

test('navigate: a hook that hangs is aborted → {cancelled, aborted}, unchanged', async () => {
  const s = load();
  const controller = new AbortController();
  const pending = s.navigateTree('a9', {
    signal: controller.signal,
    summarize: async () => 'never asked',
    hooks: { session_before_tree: () => new Promise(() => {}) },
  });
  setTimeout(() => controller.abort(), 20);
  assert.deepEqual(await pending, { cancelled: true, aborted: true });
  assertUnchanged(s, 'navigate hanging hook');
});

test('navigate: a throwing hook is ignored and the navigation commits', async () => {
  const s = load();
  const r = await s.navigateTree('a9', {
    summarize: async () => 'we explored the main branch',
    hooks: {
      session_before_tree: () => {
        throw new Error('hook bug');
      },
      session_tree: async () => Promise.reject(new Error('late hook bug')),
    },
  });
  assert.equal(r.cancelled, false);
  assert.equal(s.size, 15, 'the branch summary entry');
  assert.equal(s.entry(r.summaryEntryId).type, 'branch_summary');
  assert.equal(s.entry(s.leafId).type, 'branch_summary');
});
