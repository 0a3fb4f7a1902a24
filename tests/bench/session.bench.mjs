// Loading a generated 50,000-entry (~144 MB) session into wasm under Node.js, and building the
// LLM context of its active path (issue: foundation, "Speed and size").
//
// The session comes from the crate's generator (`gen-session --preset bench`) and is cached in
// tests/out/bench/. It is handed over as a Uint8Array, as an app that read the file would.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Session, wasmMemoryBytes } from 'ctxfold';
import { median } from './lib.mjs';

const outDir = fileURLToPath(new URL('../out/bench/', import.meta.url));
const repoDir = fileURLToPath(new URL('../../', import.meta.url));

function generated(name, args) {
  const file = path.join(outDir, name);
  if (!existsSync(file)) {
    mkdirSync(outDir, { recursive: true });
    const res = spawnSync(
      'cargo',
      ['run', '--quiet', '--release', '--features', 'testkit', '--bin', 'gen-session', '--', ...args, '--out', file],
      { cwd: repoDir, stdio: ['ignore', 'inherit', 'inherit'] },
    );
    if (res.status !== 0) throw new Error(`gen-session failed for ${name}`);
  }
  // A Buffer is a Uint8Array: no copy.
  return readFileSync(file);
}

function timed(fn) {
  const t0 = performance.now();
  const value = fn();
  return [performance.now() - t0, value];
}

function row(name, times, unit = 'ms', note) {
  return {
    name,
    median: median(times),
    min: Math.min(...times),
    max: Math.max(...times),
    unit,
    samples: times.length,
    ...(note ? { note } : {}),
  };
}

export default async function () {
  const bytes = generated('bench-50k.jsonl', ['--preset', 'bench']);
  const mb = (bytes.length / 1e6).toFixed(1);
  const rows = [];

  // The first load in a fresh process also grows the wasm memory from nothing.
  const rssBefore = process.memoryUsage().rss;
  const [cold, first] = timed(() => Session.fromJsonl(bytes));
  const [coldCtx] = timed(() => first.buildContext());
  const peakRss = process.resourceUsage().maxRSS * 1024;
  const wasmBytes = wasmMemoryBytes();
  rows.push(row('load, first in process (cold)', [cold], 'ms', `${mb} MB, ${first.size} entries`));
  rows.push(row('buildContext, first call', [coldCtx], 'ms'));
  first.free();

  const loads = [];
  const contexts = [];
  const sizes = [];
  for (let i = 0; i < 7; i++) {
    const [t, s] = timed(() => Session.fromJsonl(bytes));
    loads.push(t);
    const [c, ctx] = timed(() => s.buildContext());
    contexts.push(c);
    sizes.push(ctx.messages.length);
    s.free();
  }
  rows.push(row('load (parse + migrate + index), warm', loads, 'ms', `${mb} MB Uint8Array`));
  rows.push(row('buildContext of the active path', contexts, 'ms', `${sizes[0]} messages, incl. JSON.parse`));
  rows.push({
    name: 'peak RSS of the process (file + wasm + Node)',
    median: peakRss / 1e6,
    unit: 'MB',
    samples: 1,
    note: `RSS before load ${(rssBefore / 1e6).toFixed(0)} MB (the file's bytes included)`,
  });
  rows.push({ name: 'wasm linear memory after load', median: wasmBytes / 1e6, unit: 'MB', samples: 1 });
  return rows;
}
