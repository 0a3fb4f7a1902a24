#!/usr/bin/env node
// `make bench-reference`: the same steps (common.mjs) on the same sessions in ctxfold (the built
// package, Node.js: ours-side.mjs) and in the reference implementation (oh-my-pi 18.2.3 under
// Bun, installed from tests/reference/package-lock.json: ref-side.mjs), and a table of both
// sides' times with the ratio reference / ctxfold (above 1: ctxfold is faster).
//
//   node tests/reference/run.mjs [step...] [--json FILE]
//   env: ROUNDS=5 (rounds), PKG=pkg (the ctxfold build to measure),
//        REF_MODULES=DIR (a node_modules folder that already holds the reference and Bun's
//        platform package: no install), BUN=FILE (the Bun binary to run the reference with),
//        OURS_NODE_FLAGS="--v8-pool-size=1 ..." (Node.js flags of ctxfold's side only, printed
//        in the header: how a host's runtime settings change a first call; see
//        docs/decisions/performance-notes.md#tier-up-threads)
//
// The method (docs/performance.md): every step runs in a FRESH process per side and round, with
// no warm-up (a `chain-*` step opens its session once and times the first call of each
// operation after that open; `first` also times the import of the library), the two sides one
// after the other, the first of them changing from round to round and from step to step (this
// machine's speed swings by up to 2× within seconds, so the sides are timed side by side). Each
// row gives both sides' median and min–max over the rounds, and the ratio of the medians with
// its range over the rounds (each round's reference time over the same round's ctxfold time).
// The machine's load average is printed before and after. The sessions: the real pi session of
// the conformance data (../shared/conformance/large-session/session.jsonl, a v1 file migrated
// on open) and the generated 50,000-entry ones `make bench` uses (tests/out/bench/,
// gen-session --preset bench [--no-compactions], generated when missing); the step `rss`, run
// only when named, opens a generated 200,000-entry one (564 MB) and reports the peak RSS.
// Each side opens a session from its file inside the timed open: ctxfold with
// Session.fromAsyncReader and FileHandle.read (as docs/guide/compaction.md tells a Node.js
// host), the reference by reading the text into its in-memory session storage.
// To compare two ctxfold builds instead, alternate them in one process with
// tests/bench/ab.mjs (it takes ours-side.mjs as a bench file).
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
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
const pkgEntry = pathToFileURL(path.join(pkgDir, 'entries', 'node.js')).href;

// The reference and Bun, as tests/reference/package-lock.json pins them, installed when the
// lockfile is newer than the last install. `npm install`, not `npm ci`: the reference's native
// module lists optional packages for other platforms that the registry here does not serve, so
// the lockfile cannot name them and `npm ci` refuses it; `npm install` installs the locked
// versions and leaves the lockfile as it is. No install script runs: Bun's binary is taken from
// its platform package (its own postinstall only links it), and the others fetch files.
// REF_MODULES=DIR uses an existing installation instead (no install).
const modules = path.resolve(process.env.REF_MODULES || path.join(here, 'node_modules'));
const stamp = path.join(modules, '.ctxfold-install-stamp');
const newer = (a, b) => statSync(a).mtimeMs > statSync(path.join(here, b)).mtimeMs;
if (process.env.REF_MODULES) {
  if (!existsSync(path.join(modules, '@oh-my-pi', 'pi-coding-agent'))) fail(`REF_MODULES=${modules} has no @oh-my-pi/`);
} else if (!(existsSync(stamp) && newer(stamp, 'package.json') && newer(stamp, 'package-lock.json'))) {
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
  ...(process.env.BUN ? [path.resolve(process.env.BUN)] : []),
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
if (!bun) fail(`no runnable Bun (tried ${candidates.join(', ')}; BUN=FILE names one)`);
const refVersion = JSON.parse(
  readFileSync(path.join(modules, '@oh-my-pi', 'pi-coding-agent', 'package.json'), 'utf8'),
).version;
// The reference keeps its state under the home folder: give it one of its own.
const refHome = path.join(outDir, 'bench-reference', 'home');
mkdirSync(refHome, { recursive: true });
// The reference's side runs from a folder whose node_modules is the installation: its own
// (tests/reference/) or, with REF_MODULES, a copy of the two scripts beside a link to it.
let refDir = here;
if (process.env.REF_MODULES) {
  refDir = path.join(outDir, 'bench-reference', 'side');
  mkdirSync(refDir, { recursive: true });
  for (const f of ['ref-side.mjs', 'common.mjs']) copyFileSync(path.join(here, f), path.join(refDir, f));
  const link = path.join(refDir, 'node_modules');
  rmSync(link, { force: true, recursive: false });
  symlinkSync(modules, link);
}

// The inputs: the real session and the text of the conformance data, the generated sessions.
const steps = STEPS.filter((s) => (only.length === 0 ? !s.optIn : only.includes(s.id)));
const conformance = path.join(repoDir, '..', 'shared', 'conformance');
const input = path.join(conformance, 'snapcompact', 'input.txt');
const small = path.join(conformance, 'large-session', 'session.jsonl');
const files = { text: input, small };
const sizes = {};
for (const [key, name, genArgs] of [
  ['main', 'bench-50k.jsonl', ['--preset', 'bench']],
  ['nocomp', 'bench-50k-nocomp.jsonl', ['--preset', 'bench', '--no-compactions']],
  ['huge', 'bench-200k.jsonl', ['--preset', 'bench', '--entries', '200000']],
]) {
  if (!steps.some((s) => s.session === key)) continue;
  generatedSession(name, genArgs, { release: true });
  files[key] = path.join(outDir, 'bench', name);
  sizes[key] = statSync(files[key]).size;
}
const skipped = [];
for (const [key, file] of [
  ['text', input],
  ['small', small],
]) {
  if (existsSync(file)) continue;
  for (let i = steps.length - 1; i >= 0; i--) {
    if (steps[i].session !== key) continue;
    skipped.push(`${steps[i].id} (no ${file})`);
    steps.splice(i, 1);
  }
}
if (existsSync(small)) sizes.small = statSync(small).size;
const childArgs = (step) => ['--step', step.id, ...Object.entries(files).flatMap(([k, v]) => [`--${k}`, v])];

const oursFlags = (process.env.OURS_NODE_FLAGS || '').split(/\s+/).filter(Boolean);
const sides = {
  ours: (step) => ({
    cmd: process.execPath,
    argv: ['--expose-gc', ...oursFlags, path.join(here, 'ours-side.mjs'), ...childArgs(step)],
    env: { ...process.env, CTXFOLD_PKG: pkgEntry },
  }),
  ref: (step) => ({
    cmd: bun,
    argv: [path.join(refDir, 'ref-side.mjs'), ...childArgs(step)],
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
  const res = spawnSync(cmd, argv, {
    cwd: side === 'ref' ? refDir : here,
    env,
    encoding: 'utf8',
    timeout: 10 * 60_000,
  });
  const last = res.stdout?.trim().split('\n').at(-1);
  if (res.status === 0 && last?.startsWith('[')) return JSON.parse(last);
  console.error(
    `\nbench-reference: ${side === 'ours' ? 'ctxfold' : 'reference'} ${step.id} failed (exit ${res.status ?? res.signal})\n${res.stdout ?? ''}${res.stderr ?? ''}`,
  );
  return null;
}

// results: row name → { step, ours: [ms by round], ref: [ms by round], notes: { ours, ref } },
// in first-seen order (a round whose child failed leaves a hole).
const results = new Map();
let failed = 0;
const startedAt = new Date();
const loadBefore = os.loadavg();
const t0 = performance.now();
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
        r[side][round] = row.ms;
        if (row.note) r.notes[side] = row.note;
      }
    }
  });
}
const seconds = (performance.now() - t0) / 1000;
const loadAfter = os.loadavg();
process.stderr.write('\r\x1b[K');

const fmt = (v) => (v === undefined ? '—' : v >= 100 ? v.toFixed(0) : v >= 1 ? v.toFixed(2) : v.toFixed(3));
const present = (values) => values.filter((v) => v !== undefined);
const stat = (values) => {
  const v = present(values);
  return v.length ? { min: Math.min(...v), max: Math.max(...v), median: median(v) } : {};
};
/** Each round's reference time over the same round's ctxfold time (both sides present). */
const roundRatios = (r) => r.ours.flatMap((ours, i) => (ours > 0 && r.ref[i] > 0 ? [r.ref[i] / ours] : []));
const range = (st) => (st.min === undefined ? '—' : `${fmt(st.min)}–${fmt(st.max)}`);
const times = (st) => (st.median === undefined ? '—' : `${fmt(st.median)} (${range(st)})`);
// A folder relative to the working directory when inside it, else absolute.
const shown = (dir) =>
  path.relative(process.cwd(), dir).startsWith('..') ? dir : path.relative(process.cwd(), dir) || '.';
const mb = (n) => `${(n / 1e6).toFixed(1)} MB`;
const load = (l) => l.map((x) => x.toFixed(2)).join(' ');

console.log(
  `ctxfold ${pkgVersion} (${shown(pkgDir)}, Node.js ${process.version}${oursFlags.length ? ` ${oursFlags.join(' ')}` : ''}) against the reference ` +
    `(oh-my-pi ${refVersion}, Bun ${bunVersion}), ${startedAt.toISOString()}, ${os.cpus().length} CPUs`,
);
console.log(
  `${rounds} rounds in ${seconds.toFixed(0)} s, the sides alternating; each step in a fresh process per side and ` +
    'round, no warm-up: every time is a first call after the open (and the import, in `first`)',
);
console.log(`load average (1, 5, 15 min): ${load(loadBefore)} before, ${load(loadAfter)} after`);
if (sizes.small)
  console.log(`small: the real pi session of the conformance data (${mb(sizes.small)}, v1, migrated on open)`);
if (sizes.nocomp)
  console.log(`nocomp: gen-session --preset bench --no-compactions (${mb(sizes.nocomp)}, 50,000 entries)`);
if (sizes.main) console.log(`main: gen-session --preset bench (${mb(sizes.main)}, 50,000 entries, 209 compactions)`);
if (sizes.huge)
  console.log(
    `huge: gen-session --preset bench --entries 200000 (${mb(sizes.huge)}, 200,000 entries, 800 compactions)`,
  );
console.log(
  'times in ms (per frame for frames; MiB for a peak RSS): median (min–max); ratio = reference / ctxfold of the ' +
    'medians (above 1: ctxfold is faster, or holds less), and its min–max over the rounds\n',
);

const width = Math.max(20, ...[...results.keys()].map((n) => n.length));
console.log(
  `${'step'.padEnd(width)} ${'ctxfold'.padStart(24)} ${'reference'.padStart(24)} ${'ratio'.padStart(7)} ${'ratio min–max'.padStart(13)}`,
);
const out = [];
let lastStep = null;
for (const [name, r] of results) {
  const ours = stat(r.ours);
  const ref = stat(r.ref);
  const ratios = stat(roundRatios(r));
  const ratio = ref.median > 0 && ours.median > 0 ? ref.median / ours.median : undefined;
  out.push({
    name,
    step: r.step,
    ctxfold: { ...ours, values: r.ours },
    reference: { ...ref, values: r.ref },
    ratio: { median: ratio, min: ratios.min, max: ratios.max },
    notes: r.notes,
  });
  if (lastStep !== null && r.step !== lastStep) console.log('');
  lastStep = r.step;
  console.log(
    `${name.padEnd(width)} ${times(ours).padStart(24)} ${times(ref).padStart(24)} ${(ratio === undefined ? '—' : `${ratio.toFixed(2)}×`).padStart(7)} ${range(ratios).padStart(13)}`,
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
  const meta = {
    node: process.version,
    nodeFlags: oursFlags,
    bun: bunVersion,
    reference: refVersion,
    ctxfold: pkgVersion,
  };
  writeFileSync(
    jsonOut,
    `${JSON.stringify({ ...meta, pkg: pkgDir, rounds, startedAt, seconds, load: { before: loadBefore, after: loadAfter }, results: out }, null, 2)}\n`,
  );
  console.log(`wrote ${jsonOut}`);
}
process.exit(failed ? 1 : 0);
