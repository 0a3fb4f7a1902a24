#!/usr/bin/env node
// The Anthropic server-compaction lane end to end on sessions of many tool results: a session of
// N tool call / result pairs (one user message, N assistant tool calls each answered, a final
// question and answer reporting 150,000 input tokens) goes through `compact()` with the lane
// first and a stub `fetch` answering a compaction block. One fresh process per run (the module's
// memory grows over a process's life, and how it grows is what this measures), the builds
// alternating, N = 15,000 / 30,000 / 60,000 by default. It prints each run and the medians, and
// with `--gc` the collections V8 ran (`--trace-gc`).
//
//   node tests/bench/anthropic-lane.mjs PKG_A [PKG_B …] [--rounds 3] [--sizes 15000,30000] [--gc]
//
// A run of one size in one build is `node tests/bench/anthropic-lane.mjs --child PKG N`.
import { execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = fileURLToPath(import.meta.url);
const STAMP = '2026-01-01T00:00:00.000Z';

async function child(pkg, n) {
  const { Session } = await import(`${resolve(pkg)}/node.js`);
  const line = (id, parentId, message) => JSON.stringify({ type: 'message', id, parentId, timestamp: STAMP, message });
  const usage = (input) => ({ input, output: 5, cacheRead: 0, cacheWrite: 0 });
  const model = { provider: 'anthropic', model: 'claude-opus-4-6' };
  const lines = [JSON.stringify({ type: 'session', version: 3, id: 's', timestamp: STAMP, cwd: '/' })];
  lines.push(line('u', null, { role: 'user', content: 'start', timestamp: 1 }));
  let parent = 'u';
  for (let i = 0; i < n; i++) {
    const call = { type: 'toolCall', id: `c${i}`, name: 'read', arguments: { path: `f${i}` } };
    lines.push(
      line(`a${i}`, parent, { role: 'assistant', content: [call], ...model, usage: usage(10), stopReason: 'toolUse' }),
    );
    const result = { role: 'toolResult', toolCallId: `c${i}`, toolName: 'read', isError: false };
    lines.push(line(`t${i}`, `a${i}`, { ...result, content: [{ type: 'text', text: `result ${i}` }] }));
    parent = `t${i}`;
  }
  lines.push(line('z', parent, { role: 'user', content: 'end', timestamp: 1 }));
  const answer = { role: 'assistant', content: [{ type: 'text', text: 'ok' }], ...model };
  lines.push(line('y', 'z', { ...answer, usage: usage(150_000), stopReason: 'stop' }));
  const session = Session.fromJsonl(`${lines.join('\n')}\n`);
  const body = JSON.stringify({
    id: 'm',
    type: 'message',
    role: 'assistant',
    model: model.model,
    content: [{ type: 'compaction', content: 'S', encrypted_content: 'E' }],
    stop_reason: 'compaction',
    usage: { input_tokens: 81_000, cache_read_input_tokens: 0, cache_creation_input_tokens: 0, output_tokens: 9 },
  });
  const t0 = performance.now();
  const result = await session.compact({
    model: {
      id: model.model,
      provider: 'anthropic',
      api: 'anthropic-messages',
      baseUrl: 'http://127.0.0.1:9',
      contextWindow: 200_000,
      input: ['text'],
      remoteCompaction: { enabled: true },
    },
    credentials: () => Promise.resolve({ 'x-api-key': 'k' }),
    fetch: async () => new Response(body, { status: 200, headers: { 'content-type': 'application/json' } }),
    settings: { keepRecentTokens: 100, methodOrder: ['remote'] },
    now: 1_800_000_000_000,
  });
  if (result.method !== 'remote') throw new Error(`method ${result.method}`);
  process.stdout.write(`${JSON.stringify({ ms: performance.now() - t0 })}\n`);
}

function parent(args) {
  const pkgs = [];
  let rounds = 3;
  let sizes = [15_000, 30_000, 60_000];
  let gc = false;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--rounds') rounds = Number(args[++i]);
    else if (args[i] === '--sizes') sizes = args[++i].split(',').map(Number);
    else if (args[i] === '--gc') gc = true;
    else pkgs.push(args[i]);
  }
  if (pkgs.length === 0) pkgs.push('pkg');
  const runs = new Map();
  for (let r = 0; r < rounds; r++) {
    for (const n of sizes) {
      // Which build goes first alternates by round.
      const order = r % 2 === 0 ? pkgs : [...pkgs].reverse();
      for (const pkg of order) {
        const flags = gc ? ['--trace-gc'] : [];
        const out = execFileSync(process.execPath, [...flags, HERE, '--child', pkg, String(n)], {
          encoding: 'utf8',
          maxBuffer: 64 << 20,
        });
        const { ms } = JSON.parse(out.split('\n').findLast((l) => l.startsWith('{"ms"')));
        const collections = (out.match(/Mark-Compact/g) ?? []).length;
        const key = `${pkg} ${n}`;
        runs.set(key, [...(runs.get(key) ?? []), ms]);
        console.log(`${key}: ${ms.toFixed(0)} ms${gc ? `, ${collections} mark-compact collections` : ''}`);
      }
    }
  }
  for (const [key, list] of runs) {
    const sorted = [...list].sort((a, b) => a - b);
    console.log(`median ${key}: ${sorted[Math.floor(sorted.length / 2)].toFixed(0)} ms`);
  }
}

const argv = process.argv.slice(2);
if (argv[0] === '--child') await child(argv[1], Number(argv[2]));
else parent(argv);
