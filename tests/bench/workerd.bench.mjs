// Start to first answer in Cloudflare's runtime (issue 42): npm `workerd` serves, on 127.0.0.1, a
// worker bundled by esbuild from the built package (export condition `workerd`, the `.wasm?module`
// import declared as a wasm module of the worker, as wrangler bundles it). Each of
// WORKERD_ROUNDS rounds (default 6) starts a fresh workerd process and times, from the spawn,
// the first answer to a POST of the 1 MB real pi session that the worker opens and plans a
// compaction on; a worker that answers the same POST without ctxfold (it only reads the body) is
// started the same way, turn about, as the floor: the difference is what ctxfold adds; a third
// worker imports ctxfold but only answers its version (the cost of the import alone).
// Skipped (one row saying why) without the workerd binary or the conformance session.
//
// A/B of two builds, the workers of each bundled from its folder, started turn about (which build
// goes first changes every round), the floor once a round:
//   node tests/bench/workerd.bench.mjs PKG_A PKG_B [--rounds N]
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median, timesRow } from './lib.mjs';

const require = createRequire(import.meta.url);
const SESSION = fileURLToPath(new URL('../../../shared/conformance/large-session/session.jsonl', import.meta.url));

const WORKERS = {
  ctxfold: `
import { Session } from 'ctxfold';
export default {
  async fetch(request) {
    const bytes = new Uint8Array(await request.arrayBuffer());
    const session = Session.fromJsonl(bytes);
    const plan = session.planCompaction();
    const answer = { entries: session.size, requests: plan.pending.length };
    plan.free();
    session.free();
    return Response.json(answer);
  },
};
`,
  imported: `
import { version } from 'ctxfold';
export default {
  async fetch(request) {
    const bytes = new Uint8Array(await request.arrayBuffer());
    return Response.json({ bytes: bytes.length, version: version() });
  },
};
`,
  floor: `
export default {
  async fetch(request) {
    const bytes = new Uint8Array(await request.arrayBuffer());
    return Response.json({ bytes: bytes.length });
  },
};
`,
};

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

const config = (name, port, date, wasm) => `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .w) ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);
const w :Workerd.Worker = (
  modules = [
    (name = "${name}.js", esModule = embed "${name}.js"),${wasm ? '\n    (name = "ctxfold_bg.wasm", wasm = embed "ctxfold_bg.wasm"),' : ''}
  ],
  compatibilityDate = "${date}",
);
`;

/** Spawns workerd on `dir/NAME.capnp` and POSTs `body` until it answers: ms from the spawn. */
async function firstAnswer(bin, dir, name, port, body) {
  const t0 = performance.now();
  const proc = spawn(bin, ['serve', `${name}.capnp`], { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  let logs = '';
  proc.stderr.on('data', (d) => (logs += d));
  let exited = null;
  proc.on('exit', (code, signal) => (exited = code ?? signal));
  try {
    for (;;) {
      if (exited !== null) throw new Error(`workerd exited with ${exited}:\n${logs}`);
      if (performance.now() - t0 > 20_000) throw new Error(`workerd did not answer within 20 s:\n${logs}`);
      try {
        const res = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', body });
        const json = await res.json();
        if (res.status !== 200) throw new Error(`status ${res.status}: ${JSON.stringify(json)}`);
        return [performance.now() - t0, json];
      } catch (err) {
        if (err.message.startsWith('status')) throw err;
        await new Promise((r) => setTimeout(r, 2)); // not listening yet
      }
    }
  } finally {
    const gone = new Promise((r) => proc.once('exit', r));
    if (exited === null) proc.kill('SIGKILL');
    await gone;
  }
}

/** The workerd binary of the dev dependencies, or why there is none. */
function workerdBinary() {
  try {
    const workerd = require('workerd');
    if (!existsSync(workerd.default)) throw new Error(`no binary at ${workerd.default}`);
    return { workerd };
  } catch (err) {
    return { skipped: err.message.split('\n')[0] };
  }
}

/**
 * Bundles the workers `names` into `dir` as wrangler would, with `ctxfold` from the build folder
 * `pkg` (its `workerd` export) or, without one, as tests/ resolves it; each gets a free port and
 * its config. Returns the ports by name.
 */
async function buildWorkers(workerd, dir, names, pkg) {
  const esbuild = await import('esbuild');
  mkdirSync(path.join(dir, 'src'), { recursive: true });
  const wasm = pkg ? path.join(pkg, 'entries/ctxfold_bg.wasm') : fileURLToPath(import.meta.resolve('ctxfold/wasm'));
  writeFileSync(path.join(dir, 'ctxfold_bg.wasm'), readFileSync(wasm));
  const ports = {};
  for (const name of names) {
    writeFileSync(path.join(dir, 'src', `${name}.mjs`), WORKERS[name]);
    await esbuild.build({
      entryPoints: [path.join(dir, 'src', `${name}.mjs`)],
      outfile: path.join(dir, `${name}.js`),
      // `ctxfold` as tests/ resolves it (tests/node_modules/ctxfold, or one build in ab.mjs).
      nodePaths: [path.join(process.cwd(), 'node_modules')],
      bundle: true,
      format: 'esm',
      platform: 'neutral',
      conditions: ['workerd', 'worker', 'browser'],
      logLevel: 'silent',
      plugins: [
        {
          name: 'wasm-module',
          setup(build) {
            build.onResolve({ filter: /\.wasm\?module$/ }, () => ({ path: './ctxfold_bg.wasm', external: true }));
            // The build folder's workerd entry, as its package.json exports it.
            if (pkg) {
              const exp = JSON.parse(readFileSync(path.join(pkg, 'package.json'), 'utf8')).exports['.'];
              build.onResolve({ filter: /^ctxfold$/ }, () => ({ path: path.join(pkg, exp.workerd.default) }));
            }
          },
        },
      ],
    });
    ports[name] = await freePort();
    writeFileSync(
      path.join(dir, `${name}.capnp`),
      config(name, ports[name], workerd.compatibilityDate, name !== 'floor'),
    );
  }
  return ports;
}

export default async function () {
  const { workerd, skipped } = workerdBinary();
  if (!workerd) return [{ name: 'workerd: skipped', median: 0, unit: 'ms', note: skipped }];
  if (!existsSync(SESSION)) return [{ name: 'workerd: skipped', median: 0, unit: 'ms', note: `no ${SESSION}` }];
  const body = readFileSync(SESSION);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ctxfold-workerd-bench-'));
  try {
    const ports = await buildWorkers(workerd, dir, Object.keys(WORKERS));
    const rounds = Number(process.env.WORKERD_ROUNDS ?? 6);
    const times = { ctxfold: [], imported: [], floor: [] };
    let answer;
    for (let i = 0; i < rounds; i++) {
      const order = ['ctxfold', 'imported', 'floor'];
      for (const name of i % 2 ? order.reverse() : order) {
        const [t, json] = await firstAnswer(workerd.default, dir, name, ports[name], body);
        times[name].push(t);
        if (name === 'ctxfold') answer = json;
      }
    }
    const extra = times.ctxfold.map((t, i) => t - times.floor[i]);
    return [
      timesRow('workerd: start to first answer (open 1 MB + plan)', times.ctxfold, {
        note: `workerd ${workerd.version}; ${answer.entries} entries, ${answer.requests} summary requests`,
      }),
      timesRow('workerd: start to first answer, ctxfold imported only', times.imported, {
        note: 'the same worker answering version() without opening the session',
      }),
      timesRow('workerd: start to first answer, no ctxfold', times.floor, { note: 'reads the body only' }),
      timesRow('workerd: what ctxfold adds (same round)', extra),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// A/B mode: two build folders, their workers started turn about in fresh workerd processes.
if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const args = process.argv.slice(2);
  let rounds = 12;
  const pkgs = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '--rounds') rounds = Number(args[++i]);
    else pkgs.push(path.resolve(args[i]));
  }
  const { workerd, skipped } = workerdBinary();
  if (pkgs.length !== 2 || !(rounds >= 1) || !existsSync(SESSION) || !workerd) {
    console.error(
      `usage: node tests/bench/workerd.bench.mjs PKG_A PKG_B [--rounds N] (needs the conformance data and workerd${skipped ? `: ${skipped}` : ''})`,
    );
    process.exit(2);
  }
  const body = readFileSync(SESSION);
  const root = mkdtempSync(path.join(os.tmpdir(), 'ctxfold-workerd-ab-'));
  try {
    const dirs = pkgs.map((_, k) => path.join(root, 'AB'[k]));
    const ports = [];
    for (const [k, pkg] of pkgs.entries()) {
      mkdirSync(dirs[k]);
      ports.push(
        await buildWorkers(workerd, dirs[k], k === 0 ? ['ctxfold', 'imported', 'floor'] : ['ctxfold', 'imported'], pkg),
      );
    }
    const times = [
      { ctxfold: [], imported: [] },
      { ctxfold: [], imported: [] },
    ];
    const floor = [];
    for (let i = 0; i < rounds; i++) {
      for (const k of i % 2 ? [1, 0] : [0, 1]) {
        for (const name of ['ctxfold', 'imported']) {
          times[k][name].push((await firstAnswer(workerd.default, dirs[k], name, ports[k][name], body))[0]);
        }
      }
      floor.push((await firstAnswer(workerd.default, dirs[0], 'floor', ports[0].floor, body))[0]);
    }
    const fmt = (v) => v.toFixed(1);
    const range = (v) => `${fmt(median(v))} (${fmt(Math.min(...v))}–${fmt(Math.max(...v))})`;
    console.log(
      `A = ${pkgs[0]}\nB = ${pkgs[1]}\nworkerd ${workerd.version}, ${rounds} rounds, fresh processes, A and B turn about; median (min–max), B / A`,
    );
    for (const [name, what] of [
      ['ctxfold', 'start → first answer (open 1 MB + plan)'],
      ['imported', 'start → first answer, import only'],
    ]) {
      const [a, b] = [times[0][name], times[1][name]];
      console.log(`${what.padEnd(42)} A ${range(a)}  B ${range(b)}  ${(median(b) / median(a)).toFixed(2)}`);
    }
    console.log(`${'start → first answer, no ctxfold'.padEnd(42)} ${range(floor)}`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
