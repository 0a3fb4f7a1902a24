// The edge backend example (www/examples/edge/: a Worker, one Durable Object per session running
// the Maintainer, saving through createDurableObjectStore) under workerd on 127.0.0.1, with its
// Durable Objects' SQLite storage in a folder on disk and a stub summary endpoint: many sessions
// at once, concurrent requests to one session run one at a time, and every session the same
// after the workerd process is restarted. The agent side is scripted here: each turn appends a
// user message, asks before-request, answers with a tool call, appends a large tool result, asks
// again and answers with text; the window is small, so prunes and compactions (which rewrite
// stored lines) happen along the way.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Session } from 'ctxfold';
import { startEdge, stubSummarizer } from '../../www/examples/edge/local.mjs';
import { agentTurn, callEdge, filler, reply } from './support/edge-agent.mjs';

const require = createRequire(import.meta.url);
const scenarioModule = new URL('./support/store-scenario.mjs', import.meta.url).pathname;
const workerModule = new URL('../../www/examples/edge/worker.js', import.meta.url).pathname;

function findWorkerd() {
  try {
    const bin = require('workerd').default;
    return existsSync(bin) ? null : `workerd binary not found at ${bin}`;
  } catch (err) {
    return `npm workerd is not installed (${err.message.split('\n')[0]})`;
  }
}
const missing = findWorkerd();
const skip = missing && process.env.CI !== 'true' ? `${missing}: run \`make setup\`` : false;

const WINDOW = 16_000;
let tmp;
let stub;
let edge;

before(async () => {
  if (missing) return;
  tmp = mkdtempSync(path.join(os.tmpdir(), 'ctxfold-edge-test-'));
  const entry = path.join(tmp, 'entry.mjs');
  writeFileSync(
    entry,
    `import * as ctxfold from 'ctxfold';
import { sameBytes, storeScenario } from ${JSON.stringify(scenarioModule)};
import worker, { SessionObject as Example } from ${JSON.stringify(workerModule)};

// The example, plus test routes on objects of their own: /scenario/<seed> runs the store
// property scenario against createDurableObjectStore(ctx.storage); /huge/<n> saves a line of
// about n UTF-16 units (several rows) and reads it back.
const TEST_ROUTE = /^[/](scenario|huge)[/]([0-9]+)$/;
export default {
  fetch(request, env) {
    const route = TEST_ROUTE.exec(new URL(request.url).pathname);
    if (route === null) return worker.fetch(request, env);
    return env.SESSIONS.get(env.SESSIONS.idFromName(route[0])).fetch(request);
  },
};
export class SessionObject extends Example {
  async fetch(request) {
    const route = TEST_ROUTE.exec(new URL(request.url).pathname);
    if (route === null) return super.fetch(request);
    const store = ctxfold.createDurableObjectStore(this.ctx.storage);
    const n = Number(route[2]);
    if (route[1] === 'scenario') {
      const { bytes, ...result } = await storeScenario(ctxfold, store, { id: route[0], seed: n, steps: 30 });
      const reopened = await ctxfold.createDurableObjectStore(this.ctx.storage).open(route[0]);
      return Response.json({ ...result, reopened: sameBytes(reopened, bytes), list: await store.list() });
    }
    const session = ctxfold.Session.create({ cwd: '/' });
    const big = 'é'.repeat(n >> 1) + '🙂'.repeat(n >> 2) + 'x';
    session.appendMessage({ role: 'user', content: big });
    const first = session.changes(null);
    await store.save(route[0], first);
    session.appendMessage({ role: 'user', content: 'after' });
    await store.save(route[0], session.changes(first.mark));
    const rows = this.ctx.storage.sql.exec('SELECT COUNT(*) AS n FROM ctxfold_session_lines').one().n;
    return Response.json({ rows, same: sameBytes(await store.open(route[0]), session.toBytes()) });
  }
}
`,
  );
  stub = await stubSummarizer({ delayMs: 0 });
  edge = await startEdge({
    entry,
    storage: path.join(tmp, 'objects'),
    summaryUrl: stub.url,
    contextWindow: WINDOW,
    keepRecentTokens: 3000,
  });
});

after(async () => {
  await edge?.stop();
  await stub?.close();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

const call = (id, action, body) => callEdge(edge.origin, id, action, body);
const turn = (id, i) => agentTurn(edge.origin, id, i);

/** The checks every stored session passes: the store holds the live file, which loads, with only its own turns. */
async function checkSession(id) {
  const stats = await call(id, 'stats');
  assert.equal(stats.stored, true, `${id}: the store holds the live session's bytes`);
  const file = await call(id, 'file');
  const session = Session.fromJsonl(file);
  assert.deepEqual(session.warnings, []);
  const tags = new Set([...new TextDecoder().decode(file).matchAll(/\[(s-\d+)\]/g)].map((m) => m[1]));
  assert.deepEqual([...tags], [id], `${id}: the file holds its own turns only`);
  session.free();
  return { stats, file };
}

const SESSIONS = 24;
const TURNS = 10;
const ids = Array.from({ length: SESSIONS }, (_, k) => `s-${k}`);

test(`edge example under workerd: ${SESSIONS} sessions at once, ${TURNS} turns each, saved through the Durable Object store`, {
  skip,
  timeout: 300_000,
}, async (t) => {
  const t0 = performance.now();
  await Promise.all(
    ids.map(async (id) => {
      for (let i = 0; i < TURNS; i++) await turn(id, i);
    }),
  );
  const ms = performance.now() - t0;
  const all = [];
  for (const id of ids) all.push((await checkSession(id)).stats);
  const sum = (k) => all.reduce((n, s) => n + s[k], 0);
  t.diagnostic(
    `${SESSIONS * TURNS} turns in ${ms.toFixed(0)} ms; ${sum('saves')} saves (${sum('resets')} resets), ` +
      `${sum('linesAppended')} lines appended, ${sum('linesRewritten')} rewritten, ${sum('compactions')} compactions, ` +
      `${stub.requests.length} summary requests`,
  );
  // Maintenance ran and its rewrites went through the store incrementally: one reset per session (its
  // first save), every later save only the changed lines.
  assert.ok(sum('compactions') >= SESSIONS, `compactions: ${sum('compactions')}`);
  assert.ok(stub.requests.length >= SESSIONS, 'the summaries came from the endpoint');
  assert.ok(sum('linesRewritten') > 0, 'prunes rewrote stored lines');
  for (const s of all) {
    assert.equal(s.resets, 1, JSON.stringify(s));
    assert.equal(s.maxActive, 1, JSON.stringify(s));
  }
});

test('edge example: concurrent requests to one session run one at a time, in arrival order', {
  skip,
  timeout: 120_000,
}, async () => {
  const id = 's-99';
  // A slow endpoint: the compaction awaits it while the other requests arrive.
  const slow = await stubSummarizer({ delayMs: 400 });
  const local = await startEdge({
    entry: path.join(tmp, 'entry.mjs'),
    summaryUrl: slow.url,
    contextWindow: WINDOW,
    keepRecentTokens: 3000,
  });
  const saved = edge;
  edge = local;
  try {
    // Turns until the next one compacts: drive the session close to its threshold first.
    let i = 0;
    while (slow.requests.length === 0 && i < 20) await turn(id, i++);
    assert.ok(slow.requests.length > 0, 'the session compacted');
    const before = slow.requests.length;
    // One more turn's user message and a reply whose usage is over the threshold: afterResponse
    // compacts and awaits the slow summary.
    await call(id, 'append', { messages: [{ role: 'user', content: `[${id}] big ${filler(3, 2000)}` }] });
    const { tokens } = await call(id, 'before-request', {});
    const compacting = call(id, 'after-response', {
      reply: reply([{ type: 'text', text: `[${id}] answer` }], 'stop', Math.max(tokens, WINDOW - 500)),
    });
    while (slow.requests.length === before) await new Promise((r) => setTimeout(r, 5));
    // The summary request is out: these arrive while the compaction awaits it.
    const appends = Array.from({ length: 8 }, (_, k) =>
      call(id, 'append', { messages: [{ role: 'user', content: `[${id}] late ${k}` }] }),
    );
    const [answer] = await Promise.all([compacting, ...appends]);
    assert.ok(answer.report, `the reply was followed by a compaction: ${JSON.stringify(answer)}`);
    const { stats, file } = await checkSession(id);
    assert.equal(stats.maxActive, 1, 'no request of the session started before the previous one ended');
    // Every late append landed after the compaction's entry, none inside it.
    const entries = new TextDecoder()
      .decode(file)
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const lastCompaction = entries.findLastIndex((e) => e.type === 'compaction');
    const late = entries.map((e, k) => [e, k]).filter(([e]) => /\] late \d$/.test(e.message?.content ?? ''));
    assert.equal(late.length, 8);
    for (const [, k] of late)
      assert.ok(k > lastCompaction, `late append at line ${k}, compaction at ${lastCompaction}`);
  } finally {
    edge = saved;
    await local.stop();
    await slow.close();
  }
});

test('Durable Object store under workerd: seeded sessions saved after every step and reopened equal toBytes()', {
  skip,
  timeout: 120_000,
}, async (t) => {
  const ops = {};
  let rewritten = 0;
  for (const seed of [1, 2, 3, 4]) {
    const res = await fetch(`${edge.origin}/scenario/${seed}`);
    const r = await res.json();
    assert.equal(res.status, 200, JSON.stringify(r));
    assert.deepEqual(r.mismatches, [], `seed ${seed}: open() differed from toBytes() after these steps`);
    assert.equal(r.resets, 1);
    assert.equal(r.reopened, true, 'a second store over the same storage opens it equal');
    assert.deepEqual(r.list, [`/scenario/${seed}`]);
    rewritten += r.rewritten;
    for (const [k, n] of Object.entries(r.ops)) ops[k] = (ops[k] ?? 0) + n;
  }
  t.diagnostic(`operations: ${JSON.stringify(ops)}; ${rewritten} lines rewritten in place`);
  assert.ok(rewritten > 0 && ops.compact > 0 && ops.prune > 0);
  // A line over a SQLite value's 2 MB (split into rows, surrogate pairs kept whole) comes back whole.
  const huge = await (await fetch(`${edge.origin}/huge/1600000`)).json();
  assert.deepEqual(huge, { rows: 6, same: true });
});

test('edge example: every session is the same after workerd restarts on its storage', {
  skip,
  timeout: 120_000,
}, async () => {
  const files = new Map();
  for (const id of ids) files.set(id, await call(id, 'file'));
  const pid = edge.pid;
  await edge.restart();
  assert.notEqual(edge.pid, pid, 'a new workerd process');
  for (const id of ids) {
    const stats = await call(id, 'stats');
    assert.equal(stats.requests, 1, `${id}: a fresh object`);
    assert.ok(stats.loadedLines > 0, `${id}: opened from the store`);
    assert.deepEqual(await call(id, 'file'), files.get(id), `${id}: toBytes() equal after the restart`);
  }
  // The reopened sessions go on, saved incrementally from the reopened state.
  await Promise.all(ids.slice(0, 6).map((id) => turn(id, TURNS)));
  for (const id of ids.slice(0, 6)) {
    const { stats } = await checkSession(id);
    assert.equal(stats.resets, 0, `${id}: no whole-file rewrite after the reopen: ${JSON.stringify(stats)}`);
  }
});
