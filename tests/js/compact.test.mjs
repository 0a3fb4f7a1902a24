// Compaction from JavaScript: the sans-IO plan/commit cycle and the async `compact()` shell —
// summarize callbacks, a real local HTTP server as remote endpoint, failures, aborts, retries,
// hooks and events. After every failure the session's bytes are unchanged.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { Session } from 'ctxfold';
import { header, line, usage } from './support/sessions.mjs';

/**
 * A session of `count` turns u0 → a0 → u1 → a1 …; `turn(i)` gives the user and the assistant
 * message of turn i.
 */
function turnsText(count, turn) {
  const lines = [header];
  let parent = null;
  for (let i = 0; i < count; i++) {
    const [question, answer] = turn(i);
    lines.push(line(`u${i}`, parent, question));
    lines.push(line(`a${i}`, `u${i}`, answer, '2026-01-01T00:00:02.000Z'));
    parent = `a${i}`;
  }
  return `${lines.join('\n')}\n`;
}

/** An assistant message of `model` that answers with `text`, with the `used` tokens. */
function answer(text, model = 'm', used = usage) {
  return {
    role: 'assistant',
    content: [{ type: 'text', text }],
    provider: 'anthropic',
    model,
    usage: used,
    stopReason: 'stop',
  };
}

/** A session of `turns` user/assistant turns, each ~100 tokens, the last one short. */
function sessionText(turns = 6) {
  return turnsText(turns, (i) => {
    const long = i < turns - 1;
    return [
      { role: 'user', content: long ? `question ${i} `.repeat(30) : 'last question', timestamp: 1 },
      answer(long ? `answer ${i} `.repeat(30) : 'last answer'),
    ];
  });
}

const settings = { keepRecentTokens: 10 };

function expectRejects(promise, code) {
  return assert.rejects(promise, (err) => {
    assert.ok(err instanceof Error, 'an Error');
    assert.equal(err.code, code, err.message);
    return true;
  });
}

let server;
let serverUrl;
const serverLog = [];
let serverBehaviour = () => ({ status: 200, body: { summary: 'remote summary' } });

before(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const parsed = JSON.parse(body);
      serverLog.push({ url: req.url, headers: req.headers, body: parsed });
      const reply = serverBehaviour(req, parsed);
      if (reply.hang) return; // never answers
      res.writeHead(reply.status, { 'content-type': 'application/json', ...(reply.headers ?? {}) });
      res.end(typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body));
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  serverUrl = `http://127.0.0.1:${server.address().port}`;
});

after(() => {
  server.closeAllConnections();
  server.close();
});

test('sans-IO: plan, answer every request, commit', () => {
  const s = Session.fromJsonl(sessionText());
  const before = s.toJsonl();
  const plan = s.planCompaction(settings);
  assert.equal(plan.strategy, 'context-full');
  assert.equal(plan.preparation.firstKeptEntryId, 'u5');
  assert.deepEqual(plan.preparation.recentMessages, ['u5', 'a5']);
  let rounds = 0;
  while (!plan.isComplete) {
    rounds++;
    for (const req of plan.pending) {
      assert.ok(req.prompt.startsWith('<conversation>\n'));
      assert.ok(req.maxTokens > 0);
      plan.answer(req.id, `summary of ${req.purpose}`);
    }
  }
  assert.equal(rounds, 2, 'history first, then the short summary');
  assert.equal(s.toJsonl(), before, 'nothing changes before the commit');
  const commit = s.commitCompaction(plan);
  assert.equal(commit.compactionEntry.summary, 'summary of history');
  assert.equal(commit.compactionEntry.shortSummary, 'summary of short-summary');
  assert.equal(commit.compactionEntry.firstKeptEntryId, 'u5');
  assert.equal(commit.compactionEntry.method, 'soft');
  assert.ok(commit.tokensAfter > 0);
  assert.deepEqual(
    s.buildContext().messages.map((m) => m.role),
    ['compactionSummary', 'user', 'assistant'],
  );
  assert.throws(
    () => s.planCompaction(settings),
    (e) => e.code === 'E_ALREADY_COMPACTED',
  );
});

test('compact() with a summarize callback', async () => {
  const s = Session.fromJsonl(sessionText());
  const calls = [];
  const seen = [];
  const result = await s.compact({
    settings,
    summarize: async (req, { signal }) => {
      assert.ok(signal instanceof AbortSignal);
      calls.push(req.purpose);
      return `${req.purpose} text`;
    },
    hooks: { session_compact: (e) => seen.push(e.entryId) },
  });
  assert.deepEqual(calls, ['history', 'short-summary']);
  assert.equal(result.compactionEntry.summary, 'history text');
  assert.deepEqual(seen, [result.entryId]);
  assert.equal(s.leafId, result.entryId);
});

test('compact() through a remote endpoint (real HTTP server)', async () => {
  const s = Session.fromJsonl(sessionText());
  serverLog.length = 0;
  serverBehaviour = (_req, body) => ({ status: 200, body: { summary: `remote ${body.maxTokens}` } });
  const result = await s.compact({
    settings,
    remoteEndpoint: `${serverUrl}/summarize`,
    headers: { authorization: 'Bearer k' },
  });
  assert.equal(serverLog.length, 2);
  assert.deepEqual(Object.keys(serverLog[0].body), ['systemPrompt', 'prompt', 'maxTokens']);
  assert.equal(serverLog[0].headers.authorization, 'Bearer k');
  assert.equal(serverLog[0].headers['content-type'], 'application/json');
  assert.equal(result.compactionEntry.summary, 'remote 13107');
  assert.equal(result.compactionEntry.method, 'remote');

  // OpenAI-compatible chat completions.
  const t = Session.fromJsonl(sessionText());
  serverLog.length = 0;
  serverBehaviour = () => ({
    status: 200,
    body: {
      choices: [
        {
          message: {
            content: [
              { type: 'text', text: 'chat ' },
              { type: 'text', text: 'summary' },
            ],
          },
        },
      ],
    },
  });
  const chat = await t.compact({ settings, remoteEndpoint: `${serverUrl}/v1/chat/completions`, model: 'gpt-x' });
  assert.equal(chat.compactionEntry.summary, 'chat summary');
  assert.equal(serverLog[0].body.model, 'gpt-x');
  assert.equal(serverLog[0].body.messages[0].role, 'system');
  assert.equal(serverLog[0].body.stream, false);
});

test('failures leave the session byte-identical', async () => {
  const text = sessionText();
  const s = Session.fromJsonl(text);
  const retry = { baseDelayMs: 5, maxRetries: 1 };
  // A summarizer that throws.
  await expectRejects(
    s.compact({
      settings,
      retry,
      summarize: () => {
        throw new Error('model exploded');
      },
    }),
    'E_SUMMARIZER',
  );
  // One that rejects, with the auto-compaction prefix.
  await assert.rejects(
    s.compact({
      settings,
      retry,
      reason: 'threshold',
      summarize: async () => {
        throw new Error('bad request');
      },
    }),
    /^Error: Auto-compaction failed: bad request/,
  );
  // An endpoint that always fails.
  serverBehaviour = () => ({ status: 500, body: { error: 'boom' } });
  await assert.rejects(s.compact({ settings, retry, remoteEndpoint: `${serverUrl}/x` }), (e) => {
    assert.equal(e.code, 'E_SUMMARIZER');
    assert.match(e.message, /Remote compaction failed \(500 Internal Server Error\)/);
    return true;
  });
  // A body without a summary; invalid JSON.
  serverBehaviour = () => ({ status: 200, body: { nope: 1 } });
  await assert.rejects(s.compact({ settings, retry, remoteEndpoint: `${serverUrl}/x` }), /missing summary/);
  serverBehaviour = () => ({ status: 200, body: 'not json' });
  await assert.rejects(s.compact({ settings, retry, remoteEndpoint: `${serverUrl}/x` }), /invalid JSON/);
  // Empty answers count as failures.
  await expectRejects(s.compact({ settings, retry, summarize: async () => '   ' }), 'E_SUMMARIZER');
  // No summarizer at all.
  await expectRejects(s.compact({ settings }), 'E_INVALID_ARGUMENT');
  assert.equal(s.toJsonl(), text);
});

test('a hanging summarizer is aborted; so is a hanging endpoint', async () => {
  const text = sessionText();
  const s = Session.fromJsonl(text);
  const controller = new AbortController();
  const pending = s.compact({ settings, signal: controller.signal, summarize: () => new Promise(() => {}) });
  setTimeout(() => controller.abort(), 30);
  await expectRejects(pending, 'E_ABORTED');
  serverBehaviour = () => ({ hang: true });
  const c2 = new AbortController();
  const remote = s.compact({ settings, signal: c2.signal, remoteEndpoint: `${serverUrl}/hang` });
  setTimeout(() => c2.abort(), 50);
  await expectRejects(remote, 'E_ABORTED');
  // Already aborted before the start.
  await expectRejects(s.compact({ settings, signal: AbortSignal.abort(), summarize: async () => 'x' }), 'E_ABORTED');
  assert.equal(s.toJsonl(), text);
});

test('a summarizer is handed a real AbortSignal that follows an AbortSignalLike given to compact()', async () => {
  const text = sessionText();
  const s = Session.fromJsonl(text);
  // A signal of the caller's own that is not an AbortSignal (what AbortSignalLike declares).
  const listeners = [];
  const like = {
    aborted: false,
    addEventListener: (_type, f) => listeners.push(f),
    removeEventListener: (_type, f) => listeners.splice(listeners.indexOf(f), 1),
  };
  const handed = [];
  const pending = s.compact({
    settings,
    signal: like,
    summarize: (_req, { signal }) => {
      handed.push(signal);
      return new Promise(() => {});
    },
  });
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(handed.length, 1);
  assert.ok(handed[0] instanceof AbortSignal, 'a real AbortSignal, which fetch takes');
  assert.equal(handed[0].aborted, false);
  like.aborted = true;
  for (const f of [...listeners]) f();
  await expectRejects(pending, 'E_ABORTED');
  assert.equal(handed[0].aborted, true, "it aborts with the caller's signal");
  assert.equal(s.toJsonl(), text);
});

test('transient failures are retried: 503, 503, then success', async () => {
  const s = Session.fromJsonl(sessionText());
  let calls = 0;
  const summarize = async (req) => {
    calls++;
    if (req.purpose === 'history' && calls <= 2) {
      const err = new Error('503 Service Unavailable');
      err.status = 503;
      throw err;
    }
    return `ok ${req.purpose}`;
  };
  const t0 = performance.now();
  const result = await s.compact({ settings, summarize, retry: { baseDelayMs: 20 } });
  assert.equal(result.compactionEntry.summary, 'ok history');
  assert.equal(calls, 4, '3 history attempts + the short summary');
  assert.ok(performance.now() - t0 >= 20 + 40, 'waited 2 s·2^n scaled to 20 ms·2^n');
  // retry-after from a 429 endpoint is honoured.
  const t = Session.fromJsonl(sessionText());
  let hits = 0;
  serverBehaviour = () =>
    ++hits === 1
      ? { status: 429, headers: { 'retry-after': '0.1' }, body: {} }
      : { status: 200, body: { summary: 'after wait' } };
  const t1 = performance.now();
  const r = await t.compact({ settings, remoteEndpoint: `${serverUrl}/x`, retry: { baseDelayMs: 1 } });
  assert.equal(r.compactionEntry.summary, 'after wait');
  assert.ok(performance.now() - t1 >= 100, 'waited the retry-after');
  // A second candidate is tried when the first gives up.
  const u = Session.fromJsonl(sessionText());
  const res = await u.compact({
    settings,
    summarize: [
      () => {
        throw Object.assign(new Error('forbidden'), { status: 403 });
      },
      async () => 'backup',
    ],
  });
  assert.equal(res.compactionEntry.summary, 'backup');
});

test('hooks: cancel, supply the compaction, add context; events', async () => {
  const text = sessionText();
  const s = Session.fromJsonl(text);
  await expectRejects(
    s.compact({ settings, summarize: async () => 'x', hooks: { session_before_compact: () => ({ cancel: true }) } }),
    'E_CANCELLED',
  );
  assert.equal(s.toJsonl(), text);
  // A throwing hook is ignored; hooks run in order; a supplied compaction skips the summarizer.
  const order = [];
  let called = false;
  const supplied = await s.compact({
    settings,
    summarize: async () => {
      called = true;
      return 'x';
    },
    hooks: [
      {
        session_before_compact: () => {
          order.push('before1');
          throw new Error('ignored');
        },
      },
      {
        session_before_compact: (e) => {
          order.push('before2');
          assert.equal(e.preparation.firstKeptEntryId, 'u5');
          return { compaction: { summary: 'from the hook', tokensBefore: 999 } };
        },
        session_compact: (e) => order.push(`after:${e.fromExtension}`),
      },
    ],
  });
  assert.equal(called, false);
  assert.deepEqual(order, ['before1', 'before2', 'after:true']);
  assert.equal(supplied.compactionEntry.fromExtension, true);
  assert.equal(supplied.compactionEntry.tokensBefore, 999);
  assert.equal(supplied.compactionEntry.method, undefined);
  // session.compacting adds context lines and preserveData; onEvent sees start and end.
  const t = Session.fromJsonl(text);
  const prompts = [];
  const events = [];
  const r = await t.compact({
    settings,
    reason: 'threshold',
    summarize: async (req) => {
      prompts.push(req.prompt);
      return 'sum';
    },
    hooks: {
      'session.compacting': () => ({ context: ['todo: ship it'], preserveData: { memo: 1 } }),
      onEvent: (e) => events.push(e.type),
    },
  });
  assert.ok(prompts[0].includes('<additional-context>\n- todo: ship it\n</additional-context>'));
  assert.deepEqual(r.compactionEntry.preserveData, { memo: 1 });
  assert.deepEqual(events, ['auto_compaction_start', 'auto_compaction_end']);
});

test('an automatic compaction that fails ends with an event saying whether it was aborted', async () => {
  const cases = [
    // A hook cancels: aborted.
    [{ session_before_compact: () => ({ cancel: true }) }, async () => 'sum', true],
    // Every summarizer fails: failed, not aborted.
    [{}, async () => Promise.reject(new Error('down')), false],
  ];
  for (const [hooks, summarize, aborted] of cases) {
    const s = Session.fromJsonl(sessionText());
    const before = s.toJsonl();
    const events = [];
    await assert.rejects(
      s.compact({
        settings: { keepRecentTokens: 10 },
        reason: 'threshold',
        summarize,
        hooks: { ...hooks, onEvent: (e) => events.push(e) },
      }),
    );
    const end = events.find((e) => e.type === 'auto_compaction_end');
    assert.equal(end?.aborted, aborted, JSON.stringify(events));
    assert.equal(end?.willRetry, false);
    assert.equal(typeof end?.errorMessage, 'string');
    assert.equal(s.toJsonl(), before);
  }
});

test('one compaction at a time; nothing to compact', async () => {
  const s = Session.fromJsonl(sessionText());
  let release;
  const gate = new Promise((r) => (release = r));
  const first = s.compact({
    settings,
    summarize: async () => {
      await gate;
      return 'x';
    },
  });
  await expectRejects(s.compact({ settings, summarize: async () => 'y' }), 'E_BUSY');
  release();
  await first;
  const tiny = Session.fromJsonl(
    `${header}\n${JSON.stringify({ type: 'message', id: 'u', parentId: null, message: { role: 'user', content: 'hi' } })}\n`,
  );
  await expectRejects(tiny.compact({ summarize: async () => 'x' }), 'E_NOTHING_TO_COMPACT');
  // The session changed while the summarizer worked: the plan is stale, nothing is written.
  const u = Session.fromJsonl(sessionText());
  let snapshot;
  const stale = u.compact({
    settings,
    summarize: async () => {
      if (snapshot === undefined) {
        u.appendMessage({ role: 'user', content: 'meanwhile' });
        snapshot = u.toJsonl();
      }
      return 'late';
    },
  });
  await expectRejects(stale, 'E_STALE_PLAN');
  assert.equal(u.toJsonl(), snapshot);
});

test('handoff: a new session holds the document', () => {
  const s = Session.fromJsonl(sessionText());
  const before = s.toJsonl();
  const plan = s.planCompaction({ ...settings, strategy: 'handoff' }, { customInstructions: 'focus' });
  assert.equal(plan.strategy, 'handoff');
  const [req] = plan.pending;
  assert.equal(req.purpose, 'handoff');
  plan.answer(req.id, 'Handoff: continue with the parser.');
  const next = s.commitHandoff(plan, { sessionId: 'next' });
  assert.equal(s.toJsonl(), before);
  assert.equal(next.header.parentSession, 's1');
  const [entry] = next.entries();
  assert.equal(entry.type, 'custom_message');
  assert.equal(entry.customType, 'handoff');
  assert.match(entry.content, /^Handoff: continue with the parser\./);
});

test('remoteEnabled: false keeps the endpoint out (spec §10.1 case 9)', async () => {
  const s = Session.fromJsonl(sessionText());
  serverLog.length = 0;
  const purposes = [];
  const r = await s.compact({
    settings: { ...settings, remoteEnabled: false, remoteEndpoint: `${serverUrl}/never` },
    summarize: async (req) => {
      purposes.push(req.purpose);
      return `local ${req.purpose}`;
    },
  });
  assert.equal(serverLog.length, 0, 'the endpoint was never called');
  assert.deepEqual(purposes, ['history', 'short-summary']);
  assert.equal(r.compactionEntry.summary, 'local history');
  assert.equal(r.compactionEntry.shortSummary, 'local short-summary');
  assert.equal(r.compactionEntry.method, 'soft');
});

test('a summarizer context overflow re-plans the window, and gives up at the floor', async () => {
  const text = sessionText();
  const s = Session.fromJsonl(text);
  let calls = 0;
  await assert.rejects(
    s.compact({
      settings,
      summarize: async () => {
        calls++;
        throw new Error('prompt is too long: 300000 tokens > 200000 maximum');
      },
    }),
    (err) => {
      assert.equal(err.code, 'E_SUMMARIZER');
      assert.match(err.message, /overflowed even at the smallest window/);
      return true;
    },
  );
  assert.equal(calls, 1, 'an overflow is never retried as is');
  assert.equal(s.toJsonl(), text);
});

test('a long history is summarized in windows read as the fold reaches them', () => {
  // 40 turns of ~350 tokens against an 8,000-token summarizer (1,024 tokens a call): windows.
  const text = turnsText(40, (i) => [
    { role: 'user', content: `question ${i} `.repeat(100), timestamp: 1 },
    answer(`answer ${i}`),
  ]);
  const s = Session.fromJsonl(text);
  const plan = s.planCompaction(settings, { contextWindow: 8_000 });
  assert.equal(plan.preparation.messagesToSummarize.length, 78);
  const windows = [];
  for (let round = 0; !plan.isComplete; round++) {
    assert.ok(round < 100, 'the plan completes');
    for (const r of plan.pending) {
      if (r.purpose === 'history') {
        windows.push(r.window);
        if (r.window.index > 1)
          assert.match(r.prompt, new RegExp(`<previous-summary>\\nwindow ${r.window.index - 1}\\n`));
      }
      plan.answer(r.id, r.purpose === 'history' ? `window ${r.window.index}` : 'short');
    }
  }
  assert.ok(windows.length > 2 && windows.length < 78, `${windows.length} windows`);
  assert.deepEqual(
    windows,
    windows.map((_, k) => ({ index: k + 1, last: k === windows.length - 1 })),
  );
  const commit = s.commitCompaction(plan);
  assert.ok(commit.compactionEntry.summary.startsWith(`window ${windows.length}\n`));
  // A plan reads later windows from its own session: one that moved on is refused.
  const t = Session.fromJsonl(text);
  const stale = t.planCompaction(settings, { contextWindow: 8_000 });
  t.appendMessage({ role: 'user', content: 'more', timestamp: 2 });
  assert.throws(
    () => stale.answer(stale.pending[0].id, 'x'),
    (err) => err.code === 'E_STALE_PLAN',
  );
});

test('spec §10.1 cases 7 and 8: a BigInt argument stays exact; call options reach every summarize call', async () => {
  const s = Session.fromJsonl(sessionText(4));
  // A last turn cut in the middle (history, turn prefix and short summary are all asked for)
  // whose tool call has an argument beyond 2^53.
  s.appendMessage({ role: 'user', content: 'next', timestamp: 5 });
  s.appendMessage({
    role: 'assistant',
    content: [{ type: 'toolCall', id: 'big', name: 'bash', arguments: { n: 9007199254740993n } }],
    provider: 'anthropic',
    model: 'm',
    usage,
    stopReason: 'toolUse',
    timestamp: 6,
  });
  s.appendMessage({
    role: 'toolResult',
    toolCallId: 'big',
    toolName: 'bash',
    content: [{ type: 'text', text: 'ok' }],
    isError: false,
    timestamp: 7,
  });
  s.appendMessage({
    role: 'assistant',
    content: [{ type: 'text', text: 'done' }],
    provider: 'anthropic',
    model: 'm',
    usage,
    stopReason: 'stop',
    timestamp: 8,
  });
  const seen = [];
  await s.compact({
    settings: { keepRecentTokens: 3 },
    initiator: 'agent',
    sessionId: 'sess-42',
    summarize: async (request, context) => {
      seen.push({ request, context });
      return `${request.purpose} summary`;
    },
  });
  assert.ok(
    seen.some(({ request }) => request.prompt.includes('"9007199254740993"')),
    'the exact digits, quoted',
  );
  assert.deepEqual(
    seen
      .map(({ request, context }) => [request.purpose, context.initiator, context.sessionId, context.telemetryTag])
      .sort(),
    [
      ['history', 'agent', 'sess-42', 'compaction_summary'],
      ['short-summary', 'agent', 'sess-42', 'compaction_short_summary'],
      ['turn-prefix', 'agent', 'sess-42', 'compaction_turn_prefix'],
    ],
  );
  assert.ok(seen.every(({ context }) => context.signal && typeof context.signal.aborted === 'boolean'));
});

/**
 * A session large enough for several frames of history: 60 long turns whose assistant messages
 * name `model` and report a growing input usage.
 */
function framesSessionText(model) {
  return turnsText(60, (i) => [
    { role: 'user', content: `Question ${i}: ${'why is the build slow? '.repeat(60)}`, timestamp: 1 },
    {
      ...answer(`Answer ${i}: ${'the cache is cold. '.repeat(120)}`, model, {
        input: 1_000 * (i + 1),
        output: 50,
        cacheRead: 0,
        cacheWrite: 0,
      }),
      timestamp: 2,
    },
  ]);
}

test('compact({strategy: "snapcompact"}) prints the history onto frames: no summarizer, images in the context', async () => {
  const text = framesSessionText('claude-opus-4-7');
  const s = Session.fromJsonl(text);
  const events = [];
  const r = await s.compact({
    strategy: 'snapcompact',
    model: 'claude-opus-4-7',
    settings: { keepRecentTokens: 2_000 },
    reason: 'threshold',
    hooks: { onEvent: (e) => events.push(e) },
  });
  const entry = r.compactionEntry;
  assert.equal(entry.method, 'snapcompact');
  const archive = entry.preserveData.snapcompact;
  assert.ok(archive.frames.length >= 1, 'frames');
  for (const f of archive.frames) {
    assert.equal(f.mimeType, 'image/png');
    const png = Buffer.from(f.data, 'base64');
    assert.deepEqual([...png.subarray(1, 4)], [0x50, 0x4e, 0x47], 'PNG bytes');
  }
  assert.match(entry.summary, /HISTORY/, 'the reading guide');
  assert.ok(r.tokensAfter < entry.tokensBefore, `${r.tokensAfter} < ${entry.tokensBefore}`);
  // Every rebuilt context carries the frames as image blocks of the summary message.
  const summary = s.buildContext().messages[0];
  assert.equal(summary.role, 'compactionSummary');
  const images = (summary.blocks ?? []).filter((b) => b.type === 'image');
  assert.equal(images.length, archive.frames.length);
  const head = (summary.blocks ?? []).find((b) => b.type === 'text');
  assert.match(head.text, /Question 0/, 'the oldest text is kept verbatim at the head');
  // The frames as PNG bytes, for display.
  const listed = s.archiveFrames(r.entryId);
  assert.equal(listed.length, archive.frames.length);
  assert.deepEqual([...listed[0].png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  assert.ok(listed[0].cols > 0 && listed[0].rows > 0 && listed[0].chars > 0);
  assert.deepEqual(s.archiveFrames(s.index()[0].id), []);
  // The commit's entry is read when asked for: the session's own, with its timestamp.
  assert.deepEqual(entry, s.entry(r.entryId));
  assert.equal(r.timestamp, entry.timestamp);
  assert.deepEqual(JSON.parse(JSON.stringify(r)).compactionEntry, entry);
  // The provider messages carry the frames' payloads (they cross from wasm as references),
  // on every call, and within an image budget the newest ones.
  const payloads = archive.frames.map((f) => f.data);
  const llmImages = (o) =>
    s
      .toLlmMessages(o)[0]
      .content.filter((b) => b.type === 'image')
      .map((b) => b.data);
  assert.deepEqual(llmImages(), payloads);
  assert.deepEqual(llmImages(), payloads);
  assert.deepEqual(llmImages({ maxImages: 1 }), payloads.slice(-1));
  assert.throws(
    () => s.toLlmMessages('x'),
    (e) => e.code === 'E_INVALID_ARGUMENT',
  );
  assert.deepEqual(
    events.map((e) => [e.type, e.action]),
    [
      ['auto_compaction_start', 'snapcompact'],
      ['auto_compaction_end', 'snapcompact'],
    ],
  );
});

test('snapcompact for a model without image input falls back to context-full with a warning; frame budgets in buildContext', async () => {
  const text = framesSessionText('m');
  const s = Session.fromJsonl(text);
  const events = [];
  const purposes = [];
  const r = await s.compact({
    strategy: 'snapcompact',
    input: ['text'],
    settings: { keepRecentTokens: 2_000 },
    summarize: async (req) => {
      purposes.push(req.purpose);
      return `${req.purpose} summary`;
    },
    hooks: { onEvent: (e) => events.push(e) },
  });
  assert.equal(events[0].type, 'compaction_warning');
  assert.match(events[0].message, /image input/);
  assert.ok(purposes.includes('history'), 'an LLM summary instead');
  assert.notEqual(r.compactionEntry.method, 'snapcompact');
  // Without a summarizer there is nothing to fall back to.
  const t = Session.fromJsonl(text);
  await expectRejects(
    t.compact({ strategy: 'snapcompact', input: ['text'], settings: { keepRecentTokens: 2_000 } }),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(t.toJsonl(), text);

  // A reader with images: frames, and the provider's budgets when the context is rebuilt.
  const u = Session.fromJsonl(text);
  const c = await u.compact({
    strategy: 'snapcompact',
    snapcompact: { model: 'claude-opus-4-7', shape: '5x8-bw', frameSize: 256 },
    settings: { keepRecentTokens: 2_000 },
  });
  const frames = c.compactionEntry.preserveData.snapcompact.frames.length;
  assert.ok(frames > 2, `${frames} frames`);
  const images = (o) => (u.buildContext(o).messages[0].blocks ?? []).filter((b) => b.type === 'image').length;
  assert.equal(images(), frames);
  assert.equal(images({ maxImages: 2 }), 2);
  assert.ok(images({ maxFrameDataBytes: 1 }) < frames);
  assert.throws(
    () => u.buildContext({ maxImages: -1 }),
    (e) => e.code === 'E_INVALID_ARGUMENT',
  );
});

/** A model reading images on a 32k window. */
const VISION_32K = { provider: 'anthropic', id: 'claude-sonnet-4-5', contextWindow: 32_000, input: ['text', 'image'] };

test('issue 36: a method that refuses after its plan hands over (snapcompact, then soft, on a 32k window)', async () => {
  // ~96k tokens of history: the default keepRecentTokens (20k) and reserve (16k) leave
  // snapcompact no room for frames on 32k, but a summary fits.
  const text = turnsText(40, (i) => [
    { role: 'user', content: `question ${i} `.repeat(400), timestamp: 1 },
    answer(`answer ${i} `.repeat(400)),
  ]);
  const events = [];
  const s = Session.fromJsonl(text);
  const r = await s.compact({
    methods: ['snapcompact', 'soft'],
    reason: 'threshold',
    model: VISION_32K,
    summarize: async () => 'the summary',
    hooks: { onEvent: (e) => events.push(e) },
  });
  assert.equal(r.method, 'soft');
  assert.ok(r.compactionEntry);
  const warning = events.find((e) => e.type === 'compaction_warning');
  assert.equal(warning?.method, 'snapcompact', JSON.stringify(events));
  assert.match(warning.message, /^snapcompact compaction failed: .*; trying the next preferred compaction method\.$/);
  // `soft` alone compacts the same session.
  const alone = await Session.fromJsonl(text).compact({
    methods: ['soft'],
    reason: 'threshold',
    model: VISION_32K,
    summarize: async () => 'the summary',
  });
  assert.equal(alone.method, 'soft');
});

test('issue 36: the remote method asks only the endpoint; a 502 fails it, soft runs with the callback', async () => {
  const keep = serverBehaviour;
  serverBehaviour = () => ({ status: 502, body: { error: 'bad gateway' } });
  try {
    const s = Session.fromJsonl(sessionText(8));
    serverLog.length = 0;
    const events = [];
    const r = await s.compact({
      settings,
      remoteEndpoint: `${serverUrl}/summarize`,
      summarize: async () => 'the callback summary',
      retry: { baseDelayMs: 1 },
      hooks: { onEvent: (e) => events.push(e) },
    });
    assert.equal(r.method, 'soft');
    assert.equal(r.report.method, 'soft');
    assert.equal(r.remoteFailed, true, 'the host can start the cooldown');
    // One request's retry policy (3 retries), not one per request nor a callback inside `remote`.
    assert.ok(serverLog.length >= 1 && serverLog.length <= 4, `${serverLog.length} POSTs`);
    const warning = events.find((e) => e.type === 'compaction_warning');
    assert.equal(warning?.method, 'remote', JSON.stringify(events));
    assert.match(
      warning.message,
      /^remote compaction failed: .*502.*; trying the next preferred compaction method\.$/,
      warning.message,
    );
    assert.match(s.entry(r.entryId).summary, /the callback summary/);
  } finally {
    serverBehaviour = keep;
  }
});

test('issue 36: automatic compaction that is off resolves {skipped} before the busy check; a manual one runs', async () => {
  const summarize = async () => 'a summary';
  const s = Session.fromJsonl(sessionText());
  let release;
  const gate = new Promise((r) => (release = r));
  const first = s.compact({
    settings,
    summarize: async () => {
      await gate;
      return 'x';
    },
  });
  const bytes = s.toJsonl();
  const events = [];
  const hooks = { onEvent: (e) => events.push(e) };
  const off = { ...settings, strategy: 'off' };
  assert.deepEqual(await s.compact({ settings: off, reason: 'threshold', summarize, hooks }), {
    skipped: 'off',
    method: null,
    reason: 'threshold',
  });
  const disabled = { ...settings, enabled: false };
  assert.deepEqual(await s.compact({ settings: disabled, reason: 'overflow', summarize }), {
    skipped: 'disabled',
    method: null,
    reason: 'overflow',
  });
  // `off` wins over `enabled: false`; the `strategy` option is the setting.
  assert.deepEqual(await s.compact({ settings: disabled, strategy: 'off', reason: 'idle' }), {
    skipped: 'off',
    method: null,
    reason: 'idle',
  });
  assert.equal(s.toJsonl(), bytes);
  const end = events.find((e) => e.type === 'auto_compaction_end');
  assert.equal(end?.skipped, true, JSON.stringify(events));
  await expectRejects(s.compact({ settings, summarize }), 'E_BUSY');
  release();
  await first;
  // A manual compaction is the user's request: `off` and `enabled: false` do not stop it.
  const manual = await Session.fromJsonl(sessionText()).compact({
    settings: { ...off, enabled: false },
    summarize,
  });
  assert.equal(manual.method, 'soft');
});

test('issue 36: the walk names a saved handoff document from `now`; manual handoffs and other settings save none', async () => {
  const saved = [];
  const run = (extra) =>
    Session.fromJsonl(sessionText()).compact({
      strategy: 'handoff',
      settings: { ...settings, handoffSaveToDisk: true },
      summarize: async () => '# Handoff\nNext: the parser.',
      saveArtifact: (artifact) => saved.push(artifact),
      now: Date.UTC(2026, 11, 7, 6, 51, 19, 123),
      ...extra,
    });
  const r = await run({ reason: 'threshold' });
  assert.equal(r.method, 'handoff');
  assert.deepEqual(saved, [{ name: 'handoff-2026-12-07T06-51-19-123Z.md', text: r.document, kind: 'handoff' }]);
  saved.length = 0;
  assert.equal((await run({})).method, 'handoff');
  assert.equal(
    (await run({ reason: 'threshold', settings: { ...settings, handoffSaveToDisk: false } })).method,
    'handoff',
  );
  assert.deepEqual(saved, []);
});

test('issue 36: a handoff request is the live turn: host system prompt and tools, the LLM history, the agent-attributed instruction', async () => {
  const tools = [
    {
      name: 'read',
      description: 'read a file',
      parameters: { type: 'object', properties: { path: { type: 'string' } } },
    },
  ];
  const s = Session.fromJsonl(sessionText());
  const planned = s.planCompaction({ ...settings, strategy: 'handoff' }, { customInstructions: 'the parser' })
    .pending[0];
  const history = s.toLlmMessages();
  const seen = [];
  const run = (extra) =>
    Session.fromJsonl(sessionText()).compact({
      strategy: 'handoff',
      settings,
      customInstructions: 'the parser',
      summarize: async (request) => {
        seen.push(request);
        return 'the handoff document';
      },
      ...extra,
    });
  await run({ systemPrompt: 'You are a test agent.', tools });
  const [request] = seen;
  const instruction = request.messages.at(-1).content[0].text;
  assert.ok(planned.prompt.includes(instruction) && instruction.includes('the parser'), instruction);
  const user = { role: 'user', content: [{ type: 'text', text: instruction }], attribution: 'agent' };
  const want = {
    ...planned,
    systemPrompt: 'You are a test agent.',
    tools,
    toolChoice: 'none',
    messages: [...history, user],
  };
  assert.equal(JSON.stringify(request), JSON.stringify(want));
  assert.deepEqual(request, want);
  // Tools alone keep the plan's system prompt; `null` tools are none; neither sends the plan's request.
  seen.length = 0;
  await run({ tools });
  await run({ systemPrompt: 'p', tools: null });
  await run({});
  assert.equal(
    JSON.stringify(seen[0]),
    JSON.stringify({ ...planned, tools, toolChoice: 'none', messages: want.messages }),
  );
  assert.equal(
    JSON.stringify(seen[1]),
    JSON.stringify({ ...planned, systemPrompt: 'p', tools: [], toolChoice: 'none', messages: want.messages }),
  );
  assert.equal(JSON.stringify(seen[2]), JSON.stringify(planned));
});

test('issue 36: the walk counts the request overhead the host gives as `snapcompact.nonMessageTokens`, whatever the provider rate', async () => {
  // An overhead that fills the window leaves an archive no room: snapcompact refuses and soft runs.
  for (const providerRatio of [undefined, 2]) {
    const s = Session.fromJsonl(framesSessionText('claude-opus-4-7'));
    const events = [];
    const r = await s.compact({
      strategy: 'snapcompact',
      model: 'claude-opus-4-7',
      contextWindow: 200_000,
      settings: { keepRecentTokens: 2_000 },
      snapcompact: { nonMessageTokens: 200_000 },
      providerRatio,
      summarize: async () => 'a summary',
      hooks: { onEvent: (e) => events.push(e) },
    });
    assert.equal(r.method, 'soft', `providerRatio ${providerRatio}`);
    const warning = events.find((e) => e.type === 'compaction_warning');
    assert.equal(warning?.method, 'snapcompact', JSON.stringify(events));
  }
});

test('issue 36: the handoff request after a snapcompact compaction carries the frames of the LLM history as they are', async () => {
  const s = Session.fromJsonl(framesSessionText('claude-opus-4-7'));
  await s.compact({ strategy: 'snapcompact', model: 'claude-opus-4-7', settings: { keepRecentTokens: 2_000 } });
  s.appendMessage({ role: 'user', content: 'and now?', timestamp: 3 });
  s.appendMessage(answer('the parser, with a tool result', 'claude-opus-4-7'));
  const history = s.toLlmMessages();
  assert.ok(
    history[0].content.some((b) => b.type === 'image' && b.data.length > 100),
    'the archive frames are in the history',
  );
  const seen = [];
  const r = await s.compact({
    strategy: 'handoff',
    settings: { keepRecentTokens: 10 },
    systemPrompt: 'You are a test agent.',
    tools: [{ name: 'read' }],
    summarize: async (request) => {
      seen.push(request);
      return 'the handoff document';
    },
  });
  assert.equal(r.method, 'handoff');
  const [request] = seen;
  assert.deepEqual(request.messages.slice(0, -1), history);
  assert.equal(JSON.stringify(request.messages.slice(0, -1)), JSON.stringify(history));
  assert.equal(request.messages.at(-1).attribution, 'agent');
});
