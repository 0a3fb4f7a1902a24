// A plan repeated in one process, as a long-running host plans again (issue 38's anchor harvest,
// issue 42): fresh Node.js processes, builds alternated, each opening a session once (by
// default the 1 MB real pi session of the conformance data) and timing PLANS `planCompaction`
// calls; per process the fastest and the median plan.
//
//   node tests/bench/plan-repeat.mjs PKG_A PKG_B [--rounds N] [--plans N] [--session FILE.jsonl]
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median } from './lib.mjs';

let session = fileURLToPath(new URL('../../../shared/conformance/large-session/session.jsonl', import.meta.url));

const CHILD = `
import { readFileSync } from 'node:fs';
const bytes = readFileSync(process.argv[1]);
const { Session } = await import(process.argv[2]);
const session = Session.fromJsonl(bytes);
const times = [];
for (let i = 0; i < Number(process.argv[3]); i++) {
  const t = performance.now();
  session.planCompaction();
  times.push(performance.now() - t);
}
times.sort((a, b) => a - b);
console.log(JSON.stringify({ min: times[0], median: times[times.length >> 1] }));
`;

/** The module URL of the Node.js entry of the build folder `pkg` (its package.json exports). */
function nodeEntry(pkg) {
  const exp = JSON.parse(readFileSync(path.join(pkg, 'package.json'), 'utf8')).exports?.['.'];
  const rel = exp?.node?.default ?? exp?.node ?? 'node.js';
  return pathToFileURL(path.join(pkg, typeof rel === 'string' ? rel : 'node.js')).href;
}

const args = process.argv.slice(2);
let rounds = 6;
let plans = 15;
const pkgs = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--rounds') rounds = Number(args[++i]);
  else if (args[i] === '--plans') plans = Number(args[++i]);
  else if (args[i] === '--session') session = path.resolve(args[++i]);
  else pkgs.push(path.resolve(args[i]));
}
if (pkgs.length !== 2 || !(rounds >= 1) || !(plans >= 1) || !existsSync(session)) {
  console.error('usage: node tests/bench/plan-repeat.mjs PKG_A PKG_B [--rounds N] [--plans N] [--session FILE.jsonl]');
  process.exit(2);
}
const runs = [[], []];
for (let i = 0; i < rounds; i++) {
  for (const k of i % 2 ? [1, 0] : [0, 1]) {
    const res = spawnSync(
      process.execPath,
      ['--input-type=module', '-e', CHILD, session, nodeEntry(pkgs[k]), String(plans)],
      {
        encoding: 'utf8',
      },
    );
    if (res.status !== 0) throw new Error(res.stderr);
    runs[k].push(JSON.parse(res.stdout.trim().split('\n').at(-1)));
  }
}
const fmt = (v) => v.toFixed(1);
console.log(
  `A = ${pkgs[0]}\nB = ${pkgs[1]}\nsession ${session}\n${rounds} processes per build, alternating, ${plans} plans each`,
);
for (const key of ['min', 'median']) {
  const [a, b] = runs.map((r) => r.map((x) => x[key]));
  console.log(
    `plan, ${key.padEnd(6)} per process: A ${fmt(median(a))} (${fmt(Math.min(...a))}–${fmt(Math.max(...a))})  B ${fmt(median(b))} (${fmt(Math.min(...b))}–${fmt(Math.max(...b))})  ${(median(b) / median(a)).toFixed(2)}`,
  );
}
console.log(
  `load average: ${(await import('node:os'))
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(' ')}`,
);
