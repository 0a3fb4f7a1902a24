#!/usr/bin/env node
// Runs every tests/bench/*.bench.mjs (or those whose name contains one of the arguments), each in
// a fresh Node.js process, against the built package (make pkg; imported by name, `ctxfold`), and
// prints the results. `--json FILE` also writes them as JSON.
//
//   node tests/bench/run.mjs [--json FILE] [filter...]
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const benchDir = path.dirname(fileURLToPath(import.meta.url));

// Child mode: run one bench file and print its rows as JSON on the last line.
if (process.argv[2] === '--child') {
  const mod = await import(pathToFileURL(process.argv[3]).href);
  const rows = await mod.default();
  process.stdout.write(`\n${JSON.stringify(rows)}\n`);
  process.exit(0);
}

const args = process.argv.slice(2);
let jsonOut = null;
const filters = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--json') jsonOut = args[++i];
  else filters.push(args[i]);
}

const files = readdirSync(benchDir)
  .filter((f) => f.endsWith('.bench.mjs'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();
if (files.length === 0) {
  console.error('bench: no tests/bench/*.bench.mjs file matches');
  process.exit(1);
}

const fmt = (v) => (v === undefined ? '' : v >= 100 ? v.toFixed(0) : v >= 1 ? v.toFixed(2) : v.toFixed(3));
const all = [];
let failed = 0;
for (const file of files) {
  const res = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', path.join(benchDir, file)], {
    cwd: path.dirname(benchDir),
    encoding: 'utf8',
    timeout: 10 * 60_000,
  });
  if (res.status !== 0) {
    failed++;
    console.error(`bench ${file}: failed (exit ${res.status})\n${res.stdout}${res.stderr}`);
    continue;
  }
  const rows = JSON.parse(res.stdout.trim().split('\n').at(-1));
  console.log(`\n${file}`);
  console.log(
    `  ${'benchmark'.padEnd(48)} ${'median'.padStart(10)} ${'min'.padStart(10)} ${'max'.padStart(10)}  unit  n`,
  );
  for (const row of rows) {
    all.push({ file, ...row });
    console.log(
      `  ${row.name.padEnd(48)} ${fmt(row.median).padStart(10)} ${fmt(row.min).padStart(10)} ${fmt(row.max).padStart(10)}  ${String(row.unit).padEnd(4)}  ${row.samples ?? ''}` +
        (row.note ? `  (${row.note})` : ''),
    );
  }
}
if (jsonOut) {
  mkdirSync(path.dirname(path.resolve(jsonOut)), { recursive: true });
  writeFileSync(jsonOut, `${JSON.stringify({ node: process.version, results: all }, null, 2)}\n`);
  console.log(`\nwrote ${jsonOut}`);
}
process.exit(failed ? 1 : 0);
