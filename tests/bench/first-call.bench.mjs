// The first useful call after import (issue 42), as a host that has just started sees it: a
// fresh Node.js process imports the package, opens a 1 MB session from its bytes and plans a
// compaction. Each of FIRST_ROUNDS processes (default 10) reads the session before the clock
// starts and reports its import, open and plan, the process's CPU time over open and plan (all
// threads: V8 compiles hot wasm functions again with its optimizing compiler on background
// threads, which a loaded machine or a billed isolate pays for), and the time since the process
// started (performance.now() counts from it), and, after them, its first conversion of messages
// (the first run of the formats' code; what a build that loaded them on first use would pay there:
// docs/decisions/performance-notes.md#import-lazy). No warm-up: every figure is a first call.
// The session is the real pi session of the conformance data (a v1 file, migrated on open).
//
// A/B of two builds in fresh processes, alternating (the first of each pair changes every round):
//   node tests/bench/first-call.bench.mjs PKG_A PKG_B [--rounds N]
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median, timesRow } from './lib.mjs';

const SESSION = fileURLToPath(new URL('../../../shared/conformance/large-session/session.jsonl', import.meta.url));

// The child: `ctxfold` is resolved from the working directory (tests/, or the folder of one build
// in tests/bench/ab.mjs), as an app resolves it, or given as a module URL.
const CHILD = `
import { readFileSync } from 'node:fs';
const bytes = readFileSync(process.argv[1]);
const i0 = process.cpuUsage();
const t0 = performance.now();
const { Session } = await import(process.argv[2] || 'ctxfold');
const t1 = performance.now();
const i = process.cpuUsage(i0);
const c0 = process.cpuUsage();
const session = Session.fromJsonl(bytes);
const t2 = performance.now();
const plan = session.planCompaction();
const t3 = performance.now();
const c = process.cpuUsage(c0);
const requests = plan.pending.length;
const cpu = (c.user + c.system) / 1000;
const importCpu = (i.user + i.system) / 1000;
// Then the process's first conversion of messages (the first run of the formats' code), after
// the timed chain.
const t4 = performance.now();
Session.fromMessages([{ role: 'user', content: 'hi' }, { role: 'assistant', content: 'hello' }], { format: 'openai-chat' })
  .toMessages({ format: 'anthropic' });
const convert = performance.now() - t4;
console.log(JSON.stringify({ import: t1 - t0, importCpu, open: t2 - t1, plan: t3 - t2, start: t3, cpu, requests, convert }));
`;

/** One fresh process: its figures. `spec` is the module to import (default: `ctxfold` by name). */
function child(spec) {
  const res = spawnSync(process.execPath, ['--input-type=module', '-e', CHILD, SESSION, spec ?? ''], {
    encoding: 'utf8',
  });
  if (res.status !== 0) throw new Error(res.stderr);
  return JSON.parse(res.stdout.trim().split('\n').at(-1));
}

/** The module URL of the Node.js entry of the build folder `pkg`, as its package.json exports it
 * (`entries/node.js` since 2026-12-07; `node.js` at the root before). */
function nodeEntry(pkg) {
  const exp = JSON.parse(readFileSync(path.join(pkg, 'package.json'), 'utf8')).exports?.['.'];
  const rel = exp?.node?.default ?? exp?.node ?? 'node.js';
  return pathToFileURL(path.join(pkg, typeof rel === 'string' ? rel : 'node.js')).href;
}

/** The rows of `runs` (each a child's figures). */
function rows(runs, prefix = 'first call') {
  const row = (name, pick, note) => timesRow(`${prefix}: ${name}`, runs.map(pick), { note });
  return [
    row('import', (r) => r.import, "await import('ctxfold'): module graph, compile, instantiate"),
    row('import, process CPU', (r) => r.importCpu),
    row('open 1 MB', (r) => r.open, 'Session.fromJsonl of the real v1 session (1,018 entries)'),
    row('plan', (r) => r.plan, `planCompaction: ${runs[0].requests} summary requests`),
    row('open → plan', (r) => r.open + r.plan, 'the first useful call after import'),
    row('open → plan, process CPU', (r) => r.cpu, 'every thread of the process'),
    row('import → open → plan', (r) => r.import + r.open + r.plan),
    row('process start → plan', (r) => r.start, 'includes the start of Node.js'),
    row('then first conversion', (r) => r.convert, 'fromMessages (openai-chat) → toMessages (anthropic), 2 messages'),
  ];
}

export default async function () {
  if (!existsSync(SESSION)) {
    return [{ name: 'first call: skipped', median: 0, unit: 'ms', note: `no ${SESSION}` }];
  }
  const rounds = Number(process.env.FIRST_ROUNDS ?? 10);
  const runs = [];
  for (let i = 0; i < rounds; i++) runs.push(child());
  return rows(runs);
}

// A/B mode: two build folders, alternated in fresh processes.
if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const args = process.argv.slice(2);
  let rounds = 12;
  const pkgs = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--rounds') rounds = Number(args[++i]);
    else pkgs.push(path.resolve(args[i]));
  }
  if (pkgs.length !== 2 || !(rounds >= 1) || !existsSync(SESSION)) {
    console.error('usage: node tests/bench/first-call.bench.mjs PKG_A PKG_B [--rounds N] (needs the conformance data)');
    process.exit(2);
  }
  const runs = [[], []];
  for (let i = 0; i < rounds; i++) {
    for (const k of i % 2 ? [1, 0] : [0, 1]) runs[k].push(child(nodeEntry(pkgs[k])));
  }
  const fmt = (v) => (v >= 100 ? v.toFixed(0) : v.toFixed(1));
  console.log(
    `A = ${pkgs[0]}\nB = ${pkgs[1]}\n${rounds} rounds, fresh processes, alternating; median (min–max), B / A`,
  );
  const [a, b] = runs.map((r) => rows(r, ''));
  for (let i = 0; i < a.length; i++) {
    const ra = a[i];
    const rb = b[i];
    console.log(
      `${ra.name.slice(2).padEnd(26)} A ${fmt(ra.median)} (${fmt(ra.min)}–${fmt(ra.max)})  B ${fmt(rb.median)} (${fmt(rb.min)}–${fmt(rb.max)})  ${(rb.median / ra.median).toFixed(2)}`,
    );
  }
  const paired = runs[0].map((r, i) => (runs[1][i].open + runs[1][i].plan) / (r.open + r.plan));
  console.log(`open → plan, B / A per round: median ${median(paired).toFixed(2)}`);
}
