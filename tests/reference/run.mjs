#!/usr/bin/env node
// `make bench-reference`: the same steps (common.mjs) on the same generated sessions in ctxfold
// (the built package, Node.js: ours-side.mjs) and in the reference implementation (oh-my-pi
// 18.2.3 under Bun, installed from tests/reference/package-lock.json: ref-side.mjs), and a table
// of both sides' times with the ratio reference / ctxfold (above 1: ctxfold is faster).
//
//   node tests/reference/run.mjs [step...] [--json FILE]
//   env: ROUNDS=5 (rounds per step), PKG=pkg (the ctxfold build to measure)
//
// Every step runs in a fresh process per side and round (so each starts from a freshly opened
// session and a fresh module), the two sides one after the other, the first of them changing
// from round to round (this machine's speed swings by up to 2× within seconds, so the sides are
// timed side by side). Each row gives the min and the median over the rounds. The sessions are the ones
// `make bench` uses (tests/out/bench/, gen-session --preset bench, generated when missing).
// To compare two ctxfold builds instead, alternate them in one process with
// tests/bench/ab.mjs (it takes ours-side.mjs as a bench file).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { generatedSession } from '../js/support/generated.mjs';
import { outDir, repoDir } from '../js/support/project.mjs';
import { median, STEPS } from './common.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

function fail(message) {
  console.error(`bench-reference: ${message}`);
  process.exit(2);
}

const args = process.argv.slice(2);
let jsonOut = null;
const only = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--json') jsonOut = args[++i];
  else if (STEPS.some((s) => s.id === args[i])) only.push(args[i]);
  else fail(`unknown step ${args[i]} (steps: ${STEPS.map((s) => s.id).join(' ')})`);
}
const rounds = Number(process.env.ROUNDS ?? 5);
if (!Number.isInteger(rounds) || rounds < 1) fail(`ROUNDS must be a whole number ≥ 1, not ${process.env.ROUNDS}`);

// ctxfold: the build at PKG (default pkg/), imported through its Node.js entry.
const pkgDir = path.resolve(process.env.PKG || path.join(repoDir, 'pkg'));
let pkgVersion;
try {
  const manifest = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
  if (manifest.name !== 'ctxfold') throw new Error();
  pkgVersion = manifest.version;
} catch {
  fail(`${pkgDir} is not a built ctxfold package (make pkg builds pkg/; PKG=DIR names another)`);
}
const pkgEntry = pathToFileURL(path.join(pkgDir, 'node.js')).href;

// The reference and Bun, as tests/reference/package-lock.json pins them, installed when the
// lockfile is newer than the last install. `npm install`, not `npm ci`: the reference's native
// module lists optional packages for other platforms that the registry here does not serve, so
// the lockfile cannot name them and `npm ci` refuses it; `npm install` installs the locked
// versions and leaves the lockfile as it is. No install script runs: Bun's binary is taken from
// its platform package (its own postinstall only links it), and the others fetch files.
const modules = path.join(here, 'node_modules');
const stamp = path.join(modules, '.ctxfold-install-stamp');
const newer = (a, b) => statSync(a).mtimeMs > statSync(path.join(here, b)).mtimeMs;
if (!(existsSync(stamp) && newer(stamp, 'package.json') && newer(stamp, 'package-lock.json'))) {
  console.error('[bench-reference] npm install in tests/reference/ (oh-my-pi 18.2.3 and Bun, as locked)');
  const npm = spawnSync('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd: here,
    stdio: 'inherit',
  });
  if (npm.status !== 0) fail('npm install in tests/reference/ failed');
  writeFileSync(stamp, '');
}
const oven = path.join(modules, '@oven');
const candidates = [
  ...(existsSync(oven) ? readdirSync(oven).map((d) => path.join(oven, d, 'bin', 'bun')) : []),
  path.join(modules, '.bin', 'bun'),
];
let bun;
let bunVersion;
for (const candidate of candidates) {
  const res = existsSync(candidate) && spawnSync(candidate, ['--version'], { encoding: 'utf8' });
  if (res && res.status === 0) {
    bun = candidate;
    bunVersion = res.stdout.trim();
    break;
  }
}
if (!bun) fail(`no runnable Bun in ${modules} (tried ${candidates.join(', ')})`);
const refVersion = JSON.parse(
  readFileSync(path.join(modules, '@oh-my-pi', 'pi-coding-agent', 'package.json'), 'utf8'),
).version;
// The reference keeps its state under the home folder: give it one of its own.
const refHome = path.join(outDir, 'bench-reference', 'home');
mkdirSync(refHome, { recursive: true });

// The inputs: the bench sessions (cached by make bench) and the conformance text for frames.
const steps = STEPS.filter((s) => only.length === 0 || only.includes(s.id));
const input = path.join(repoDir, '..', 'shared', 'conformance', 'snapcompact', 'input.txt');
const files = { text: input };
const sizes = {};
for (const [key, name, genArgs] of [
  ['main', 'bench-50k.jsonl', ['--preset', 'bench']],
  ['nocomp', 'bench-50k-nocomp.jsonl', ['--preset', 'bench', '--no-compactions']],
]) {
  if (!steps.some((s) => s.session === key)) continue;
  sizes[key] = generatedSession(name, genArgs, { release: true }).length;
  files[key] = path.join(outDir, 'bench', name);
}
const skipped = [];
const frames = steps.findIndex((s) => s.session === 'text');
if (frames >= 0 && !existsSync(input)) {
  steps.splice(frames, 1);
  skipped.push(`frames (no ${input})`);
}
const childArgs = (step) => ['--step', step.id, ...Object.entries(files).flatMap(([k, v]) => [`--${k}`, v])];

const sides = {
  ours: (step) => ({
    cmd: process.execPath,
    argv: ['--expose-gc', path.join(here, 'ours-side.mjs'), ...childArgs(step)],
    env: { ...process.env, CTXFOLD_PKG: pkgEntry },
  }),
  ref: (step) => ({
    cmd: bun,
    argv: [path.join(here, 'ref-side.mjs'), ...childArgs(step)],
    env: {
      ...process.env,
      HOME: refHome,
      XDG_CONFIG_HOME: path.join(refHome, '.config'),
      XDG_DATA_HOME: path.join(refHome, '.local', 'share'),
      XDG_CACHE_HOME: path.join(refHome, '.cache'),
      XDG_STATE_HOME: path.join(refHome, '.local', 'state'),
    },
  }),
};

/** Runs one side's child for `step`: its rows, or null (the failure printed). */
function runChild(side, step) {
  const { cmd, argv, env } = sides[side](step);
  const res = spawnSync(cmd, argv, { cwd: here, env, encoding: 'utf8', timeout: 10 * 60_000 });
  const last = res.stdout?.trim().split('\n').at(-1);
  if (res.status === 0 && last?.startsWith('[')) return JSON.parse(last);
  console.error(
    `\nbench-reference: ${side === 'ours' ? 'ctxfold' : 'reference'} ${step.id} failed (exit ${res.status ?? res.signal})\n${res.stdout ?? ''}${res.stderr ?? ''}`,
  );
  return null;
}

// results: row name → { step, ours: [ms], ref: [ms], notes: { ours, ref } }, in first-seen order.
const results = new Map();
let failed = 0;
const startedAt = new Date();
for (let round = 0; round < rounds; round++) {
  steps.forEach((step, index) => {
    const order = (round + index) % 2 === 0 ? ['ours', 'ref'] : ['ref', 'ours'];
    for (const side of order) {
      process.stderr.write(`\r\x1b[K[bench-reference] round ${round + 1}/${rounds}: ${step.id} (${side})`);
      const rows = runChild(side, step);
      if (!rows) {
        failed++;
        continue;
      }
      for (const row of rows) {
        if (!results.has(row.name)) results.set(row.name, { step: step.id, ours: [], ref: [], notes: {} });
        const r = results.get(row.name);
        r[side].push(row.ms);
        if (row.note) r.notes[side] = row.note;
      }
    }
  });
}
process.stderr.write('\r\x1b[K');

const fmt = (v) => (v === undefined ? '—' : v >= 100 ? v.toFixed(0) : v >= 1 ? v.toFixed(2) : v.toFixed(3));
const ratio = (ref, ours) => (ref > 0 && ours > 0 ? `${(ref / ours).toFixed(2)}×` : '—');
const stat = (values) => (values.length ? { min: Math.min(...values), median: median(values) } : {});
// A folder relative to the working directory when inside it, else absolute.
const shown = (dir) =>
  path.relative(process.cwd(), dir).startsWith('..') ? dir : path.relative(process.cwd(), dir) || '.';
const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;

console.log(
  `ctxfold ${pkgVersion} (${shown(pkgDir)}, Node.js ${process.version}) against the reference ` +
    `(oh-my-pi ${refVersion}, Bun ${bunVersion}), ${startedAt.toISOString()}`,
);
console.log(
  `${rounds} rounds, the sides alternating; each step in a fresh process per side and round, on a freshly opened session`,
);
if (sizes.main) console.log(`session: gen-session --preset bench (${mb(sizes.main)}, 50,000 entries, 209 compactions)`);
if (sizes.nocomp) console.log(`no compactions: gen-session --preset bench --no-compactions (${mb(sizes.nocomp)})`);
console.log('times in ms (per frame for frames); ratio = reference / ctxfold, above 1: ctxfold is faster\n');

const width = Math.max(20, ...[...results.keys()].map((n) => n.length));
console.log(
  `${'step'.padEnd(width)} ${'ctxfold min'.padStart(11)} ${'median'.padStart(8)} ${'ref min'.padStart(9)} ${'median'.padStart(8)} ${'ratio med'.padStart(9)} ${'ratio min'.padStart(9)}`,
);
const out = [];
for (const [name, r] of results) {
  const ours = stat(r.ours);
  const ref = stat(r.ref);
  out.push({
    name,
    step: r.step,
    ctxfold: { ...ours, values: r.ours },
    reference: { ...ref, values: r.ref },
    notes: r.notes,
  });
  console.log(
    `${name.padEnd(width)} ${fmt(ours.min).padStart(11)} ${fmt(ours.median).padStart(8)} ${fmt(ref.min).padStart(9)} ${fmt(ref.median).padStart(8)} ${ratio(ref.median, ours.median).padStart(9)} ${ratio(ref.min, ours.min).padStart(9)}`,
  );
  const { ours: a, ref: b } = r.notes;
  if (a || b)
    console.log(`${''.padEnd(width)}   ${a === b ? `both: ${a}` : `ctxfold: ${a ?? '—'}; reference: ${b ?? '—'}`}`);
}
if (skipped.length) console.log(`\nskipped: ${skipped.join('; ')}`);
console.log(
  '\nto compare two ctxfold builds on these steps: node tests/bench/ab.mjs PKG_A PKG_B tests/reference/ours-side.mjs',
);
if (jsonOut) {
  mkdirSync(path.dirname(path.resolve(jsonOut)), { recursive: true });
  const meta = { node: process.version, bun: bunVersion, reference: refVersion, ctxfold: pkgVersion };
  writeFileSync(jsonOut, `${JSON.stringify({ ...meta, pkg: pkgDir, rounds, startedAt, results: out }, null, 2)}\n`);
  console.log(`wrote ${jsonOut}`);
}
process.exit(failed ? 1 : 0);
