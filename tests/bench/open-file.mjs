// The open of a session file as a Node.js host does it, first thing in a fresh process (issue
// 42): `Session.fromAsyncReader` with `FileHandle.read` (the file read on libuv's thread while
// the lines read so far are scanned) and `Session.fromReader` with `readSync`, for each build
// given, the builds and the two ways taking turns, a new process per open.
//
//   node tests/bench/open-file.mjs PKG_A [PKG_B ...] [--rounds N] [--file FILE]
//
// FILE defaults to the generated 50,000-entry bench session (tests/out/bench/bench-50k.jsonl,
// made when missing). A build without `fromAsyncReader` is timed with `fromReader` only. Prints
// each build and way's times (median, min–max) in ms.
import { spawnSync } from 'node:child_process';
import { closeSync, fstatSync, openSync } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { generatedSession } from '../js/support/generated.mjs';
import { outDir } from '../js/support/project.mjs';
import { readWhole } from '../reference/common.mjs';
import { median } from './lib.mjs';

const self = fileURLToPath(import.meta.url);

/** Child: opens `file` with build `pkg` the `way` given; prints the open's ms (or `none`). */
async function child(pkg, file, way) {
  const { Session } = await import(pathToFileURL(path.join(pkg, 'entries', 'node.js')).href);
  if (way === 'async' && typeof Session.fromAsyncReader !== 'function') {
    console.log('none');
    return;
  }
  const t0 = performance.now();
  let session;
  if (way === 'async') {
    const handle = await open(file, 'r');
    try {
      const { size } = await handle.stat();
      session = await Session.fromAsyncReader(size, (view, position) =>
        handle.read(view, 0, view.byteLength, position).then((r) => r.bytesRead),
      );
    } finally {
      await handle.close();
    }
  } else {
    const fd = openSync(file, 'r');
    try {
      const { size } = fstatSync(fd);
      session = Session.fromReader(size, (view) => readWhole(fd, view, size));
    } finally {
      closeSync(fd);
    }
  }
  const ms = performance.now() - t0;
  if (session.size < 1) throw new Error('an empty session');
  console.log(ms.toFixed(2));
}

if (process.argv[2] === '--child') {
  await child(process.argv[3], process.argv[4], process.argv[5]);
} else {
  const args = process.argv.slice(2);
  const pkgs = [];
  let rounds = 5;
  let file;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--rounds') rounds = Number(args[++i]);
    else if (args[i] === '--file') file = path.resolve(args[++i]);
    else pkgs.push(path.resolve(args[i]));
  }
  if (pkgs.length === 0 || !Number.isInteger(rounds) || rounds < 1) {
    console.error('usage: node tests/bench/open-file.mjs PKG_A [PKG_B ...] [--rounds N] [--file FILE]');
    process.exit(2);
  }
  if (file === undefined) {
    generatedSession('bench-50k.jsonl', ['--preset', 'bench'], { release: true });
    file = path.join(outDir, 'bench', 'bench-50k.jsonl');
  }
  const times = new Map();
  for (let round = 0; round < rounds; round++) {
    // Which build and way go first changes from round to round.
    const order = pkgs.flatMap((pkg) => ['sync', 'async'].map((way) => [pkg, way]));
    for (let k = 0; k < order.length; k++) {
      const [pkg, way] = order[(k + round) % order.length];
      const res = spawnSync(process.execPath, [self, '--child', pkg, file, way], { encoding: 'utf8' });
      if (res.status !== 0) throw new Error(`${pkg} ${way}: ${res.stderr}`);
      const out = res.stdout.trim();
      if (out === 'none') continue;
      const key = `${pkg} ${way === 'async' ? 'fromAsyncReader' : 'fromReader'}`;
      if (!times.has(key)) times.set(key, []);
      times.get(key).push(Number(out));
    }
  }
  console.log(`${path.basename(file)}, ${rounds} rounds, a fresh process per open`);
  for (const [key, ms] of times) {
    console.log(`${key}: ${median(ms).toFixed(1)} ms (${Math.min(...ms).toFixed(1)}–${Math.max(...ms).toFixed(1)})`);
  }
}
