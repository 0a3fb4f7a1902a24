// Start to first answer in Cloudflare's runtime (issue 42): npm `workerd` serves, on 127.0.0.1, a
// worker bundled by esbuild from the built package (export condition `workerd`, the `.wasm?module`
// import declared as a wasm module of the worker, as wrangler bundles it). Each of
// WORKERD_ROUNDS rounds (default 6) starts a fresh workerd process and times, from the spawn,
// the first answer to a POST of the 1 MB real pi session that the worker opens and plans a
// compaction on; a worker that answers the same POST without ctxfold (it only reads the body) is
// started the same way, turn about, as the floor: the difference is what ctxfold adds; a third
// worker imports ctxfold but only answers its version (the cost of the import alone).
// Skipped (one row saying why) without the workerd binary or the conformance session.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { timesRow } from './lib.mjs';

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

export default async function () {
  let workerd;
  try {
    workerd = require('workerd');
    if (!existsSync(workerd.default)) throw new Error(`no binary at ${workerd.default}`);
  } catch (err) {
    return [{ name: 'workerd: skipped', median: 0, unit: 'ms', note: err.message.split('\n')[0] }];
  }
  if (!existsSync(SESSION)) return [{ name: 'workerd: skipped', median: 0, unit: 'ms', note: `no ${SESSION}` }];
  const esbuild = await import('esbuild');
  const body = readFileSync(SESSION);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ctxfold-workerd-bench-'));
  try {
    const wasm = fileURLToPath(import.meta.resolve('ctxfold/wasm'));
    writeFileSync(path.join(dir, 'ctxfold_bg.wasm'), readFileSync(wasm));
    const ports = {};
    for (const [name, source] of Object.entries(WORKERS)) {
      mkdirSync(path.join(dir, 'src'), { recursive: true });
      writeFileSync(path.join(dir, 'src', `${name}.mjs`), source);
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
