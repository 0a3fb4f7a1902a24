#!/usr/bin/env node
// A/B of two built packages (two `make pkg` outputs, e.g. copies of pkg/ made before and after a
// change) in ONE Node.js process: this machine's speed swings by 2× within minutes, so only
// builds timed side by side, turn about, can be compared. Every tests/bench/*.bench.mjs (or
// those whose name contains one of the filters) is loaded once per build, and in each round
// both copies run their whole workload, the order flipping every round (A B, B A, A B, …).
// Per operation it prints each build's min and median over the rounds of the bench's own
// figure (its median of its samples) and the ratio B / A (below 1: B is faster).
//
//   node tests/bench/ab.mjs PKG_A PKG_B [filter...] [--rounds N] [--warmup N] [--json FILE]
//
// A filter that ends in `.mjs` names a bench file by path instead: `tests/reference/ours-side.mjs`
// runs the steps of `make bench-reference` (open, first estimate, prepare, prune, their chain,
// agent turns, hot compaction, frames) once per round on each build.
//
// How one process holds two builds: a module resolution hook (module.register) makes a bench
// file imported as `…/x.bench.mjs?ab=a` resolve `ctxfold` (and `ctxfold/…`) to PKG_A's own
// entry for Node.js (node.js, which loads its own .wasm) through PKG_A's exports map, and
// passes the `?ab=a` tag on to every file it imports, so each build gets its own copy of the
// bench, its helpers and the package, with its own wasm instance (PKG_A = PKG_B is an A/A run:
// the noise floor). The benches that time fresh child processes (instantiate's cold import)
// import `ctxfold` by name from the working directory, so each build's runs happen in a
// directory whose node_modules/ctxfold links to that build.
//
// Read the figures knowing that the copies live on in the process: a row that a bench labels
// "first call" or "cold" is that only in the first round (a later round's session is new, but
// the module is warm and its memory already grown). Only times (unit ms…) are compared; the
// other rows (memory, RSS) are listed by name at the end.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { register } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median } from './lib.mjs';

const benchDir = path.dirname(fileURLToPath(import.meta.url));

function usage(message) {
  console.error(
    `ab: ${message}\nusage: node tests/bench/ab.mjs PKG_A PKG_B [filter...] [--rounds N] [--warmup N] [--json FILE]`,
  );
  process.exit(2);
}

const args = process.argv.slice(2);
const pkgs = [];
const filters = [];
let rounds = 8;
let warmup = 1;
let jsonOut = null;
for (let i = 0; i < args.length; i++) {
  const count = () => {
    const n = Number(args[++i]);
    if (!Number.isInteger(n) || n < 0) usage(`${args[i - 1]} takes a whole number, not ${args[i]}`);
    return n;
  };
  if (args[i] === '--rounds') rounds = count();
  else if (args[i] === '--warmup') warmup = count();
  else if (args[i] === '--json') jsonOut = args[++i];
  else if (pkgs.length < 2) pkgs.push(path.resolve(args[i]));
  else filters.push(args[i]);
}
if (pkgs.length < 2) usage('two package folders are needed');
if (rounds < 1) usage('--rounds must be at least 1');
for (const dir of pkgs) {
  let name;
  try {
    name = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')).name;
  } catch {
    usage(`${dir} has no readable package.json (is it a built pkg/ folder?)`);
  }
  if (name !== 'ctxfold') usage(`${dir}/package.json names the package ${JSON.stringify(name)}, not "ctxfold"`);
}

// Filters ending in `.mjs` are bench files by path; the others pick tests/bench/ files by name.
const byPath = filters.filter((x) => x.endsWith('.mjs')).map((x) => path.relative(benchDir, path.resolve(x)));
const byName = filters.filter((x) => !x.endsWith('.mjs'));
const files = [
  ...(byPath.length && !byName.length
    ? []
    : readdirSync(benchDir)
        .filter((f) => f.endsWith('.bench.mjs'))
        .filter((f) => byName.length === 0 || byName.some((x) => f.includes(x)))
        .sort()),
  ...byPath,
];
if (files.length === 0) usage('no tests/bench/*.bench.mjs file matches');

// The hook runs on Node.js's loader thread; it is small enough to pass as source.
const hook = `
let builds;
export function initialize(data) { builds = data.builds; }
export async function resolve(specifier, context, next) {
  const tag = context.parentURL?.startsWith('file:') ? new URL(context.parentURL).searchParams.get('ab') : null;
  if (!tag || !(tag in builds)) return next(specifier, context);
  // The package resolves itself by name from inside its folder (its exports map, the "node" condition).
  const own = specifier === 'ctxfold' || specifier.startsWith('ctxfold/');
  const result = await next(specifier, own ? { ...context, parentURL: builds[tag] } : context);
  if (!result.url.startsWith('file:')) return result;
  const url = new URL(result.url);
  url.searchParams.set('ab', tag);
  return { ...result, url: url.href };
}`;
const builds = { a: pkgs[0], b: pkgs[1] };
register(`data:text/javascript,${encodeURIComponent(hook)}`, {
  data: {
    builds: Object.fromEntries(
      Object.entries(builds).map(([k, dir]) => [k, pathToFileURL(path.join(dir, 'package.json')).href]),
    ),
  },
});

// Each build's working directory: node_modules/ctxfold -> the build.
const scratch = mkdtempSync(path.join(os.tmpdir(), 'ctxfold-ab-'));
const workDirs = {};
for (const [tag, dir] of Object.entries(builds)) {
  workDirs[tag] = path.join(scratch, tag);
  mkdirSync(path.join(workDirs[tag], 'node_modules'), { recursive: true });
  symlinkSync(dir, path.join(workDirs[tag], 'node_modules', 'ctxfold'), 'dir');
}
const home = process.cwd();

async function runBench(file, tag) {
  const mod = await import(`${pathToFileURL(path.resolve(benchDir, file)).href}?ab=${tag}`);
  process.chdir(workDirs[tag]);
  try {
    return await mod.default();
  } finally {
    process.chdir(home);
  }
}

// results[file][row name] = { unit, a: [...], b: [...] }; other rows: names only.
const results = {};
const untimed = new Set();
const order = [];
let failed = false;
try {
  for (let round = -warmup; round < rounds; round++) {
    const tags = (round + warmup) % 2 === 0 ? ['a', 'b'] : ['b', 'a'];
    const label = round < 0 ? `warm-up ${round + warmup + 1}/${warmup}` : `round ${round + 1}/${rounds}`;
    for (const file of files) {
      for (const tag of tags) {
        process.stderr.write(`\r\x1b[K[ab] ${label}: ${file} (${tag.toUpperCase()})`);
        const rows = await runBench(file, tag);
        if (round < 0) continue;
        results[file] ??= {};
        for (const row of rows) {
          if (!String(row.unit).startsWith('ms')) {
            untimed.add(`${file}: ${row.name}`);
            continue;
          }
          if (!results[file][row.name]) {
            results[file][row.name] = { unit: row.unit, a: [], b: [] };
            order.push([file, row.name]);
          }
          results[file][row.name][tag].push(row.median);
        }
      }
    }
  }
} catch (err) {
  failed = true;
  console.error(`\nab: a bench failed: ${err?.stack ?? err}`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
process.stderr.write('\r\x1b[K');

const fmt = (v) => (v >= 100 ? v.toFixed(0) : v >= 1 ? v.toFixed(2) : v.toFixed(3));
// A bench that found nothing to time reports 0: no ratio then.
const ratio = (b, a) => (a > 0 ? (b / a).toFixed(3) : '—');
const width = Math.max(9, ...order.map(([, name]) => name.length));
console.log(`A = ${pkgs[0]}\nB = ${pkgs[1]}`);
console.log(
  `${rounds} alternating rounds (after ${warmup} warm-up), node ${process.version}, ${new Date().toISOString()}`,
);
console.log(
  "per operation: min and median over the rounds of the bench's own median; B/A of the medians (and of the mins)",
);
const out = [];
let lastFile = null;
for (const [file, name] of order) {
  const r = results[file][name];
  if (file !== lastFile) {
    console.log(`\n${file}`);
    console.log(
      `  ${'benchmark'.padEnd(width)} ${'A min'.padStart(9)} ${'A med'.padStart(9)} ${'B min'.padStart(9)} ${'B med'.padStart(9)} ${'B/A med'.padStart(8)} ${'B/A min'.padStart(8)}  unit  n`,
    );
    lastFile = file;
  }
  const row = {
    file,
    name,
    unit: r.unit,
    rounds: Math.min(r.a.length, r.b.length),
    a: { min: Math.min(...r.a), median: median(r.a), values: r.a },
    b: { min: Math.min(...r.b), median: median(r.b), values: r.b },
  };
  row.ratio = row.a.median > 0 ? row.b.median / row.a.median : null;
  row.ratioMin = row.a.min > 0 ? row.b.min / row.a.min : null;
  out.push(row);
  console.log(
    `  ${name.padEnd(width)} ${fmt(row.a.min).padStart(9)} ${fmt(row.a.median).padStart(9)} ${fmt(row.b.min).padStart(9)} ${fmt(row.b.median).padStart(9)} ${ratio(row.b.median, row.a.median).padStart(8)} ${ratio(row.b.min, row.a.min).padStart(8)}  ${r.unit.padEnd(4)}  ${row.rounds}`,
  );
}
if (untimed.size) console.log(`\nnot compared (not a time): ${[...untimed].join('; ')}`);
if (jsonOut) {
  mkdirSync(path.dirname(path.resolve(jsonOut)), { recursive: true });
  writeFileSync(
    jsonOut,
    `${JSON.stringify({ node: process.version, a: pkgs[0], b: pkgs[1], rounds, warmup, results: out }, null, 2)}\n`,
  );
  console.log(`\nwrote ${jsonOut}`);
}
process.exit(failed ? 1 : 0);
