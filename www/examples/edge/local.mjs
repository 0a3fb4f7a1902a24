#!/usr/bin/env node
// Runs the edge example locally under workerd, the runtime of Cloudflare Workers (npm `workerd`),
// with this repository's built package (`make pkg`) and the tools of tests/node_modules (esbuild,
// workerd): it bundles worker.js as wrangler does (export condition `workerd`, the package's
// `.wasm?module` import kept as a wasm module of the worker), writes a workerd config with the
// SessionObject Durable Object namespace (SQLite storage in a folder on disk) and serves it on
// 127.0.0.1. The tests (tests/js/edge.test.mjs) and the benchmark (tests/bench/edge.bench.mjs)
// start it through `startEdge`; run alone it also starts a stub summary endpoint:
//
//   node www/examples/edge/local.mjs [--port 8787] [--storage DIR] [--summary-url URL] [--window 200000]
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer as httpServer } from 'node:http';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '../../..');
const tests = path.join(repo, 'tests');
const require = createRequire(path.join(tests, 'package.json'));

/** A port that was free a moment ago on 127.0.0.1. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** The workerd config: the worker, its Durable Object namespace on `storage`, outbound to 127.0.0.1. */
function config({ port, storage, compatibilityDate, vars }) {
  const bindings = Object.entries(vars)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `    (name = ${JSON.stringify(k)}, text = ${JSON.stringify(String(v))}),`)
    .join('\n');
  return `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [
    (name = "main", worker = .edge),
    (name = "objects", disk = (path = ${JSON.stringify(storage)}, writable = true)),
    (name = "outbound", network = (allow = ["public", "local"])),
  ],
  sockets = [ (name = "http", address = "127.0.0.1:${port}", http = (), service = "main") ],
);

const edge :Workerd.Worker = (
  modules = [
    (name = "worker.js", esModule = embed "worker.js"),
    (name = "ctxfold_bg.wasm", wasm = embed "ctxfold_bg.wasm"),
  ],
  compatibilityDate = "${compatibilityDate}",
  bindings = [
    (name = "SESSIONS", durableObjectNamespace = "SessionObject"),
${bindings}
  ],
  durableObjectNamespaces = [ (className = "SessionObject", uniqueKey = "ctxfold-edge-sessions", enableSql = true) ],
  durableObjectStorage = (localDisk = "objects"),
  globalOutbound = "outbound",
);
`;
}

/** Bundles `entry` (default worker.js) with the package as tests/ resolves it. */
async function bundle(entry, outDir) {
  const esbuild = require('esbuild');
  await esbuild.build({
    entryPoints: [entry],
    outfile: path.join(outDir, 'worker.js'),
    nodePaths: [path.join(tests, 'node_modules')],
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
  copyFileSync(require.resolve('ctxfold/wasm'), path.join(outDir, 'ctxfold_bg.wasm'));
}

/**
 * Bundles the example and serves it under workerd. Options: `storage` (the Durable Objects'
 * folder, default a new temporary one), `summaryUrl`, `contextWindow`, `keepRecentTokens`,
 * `entry` (a module to bundle instead of worker.js, e.g. one that adds test routes),
 * `port`. Resolves to `{ origin, pid, storage, stop(), restart() }` once it answers; `restart()`
 * stops the process and starts a new one on the same storage and port.
 */
export async function startEdge(options = {}) {
  const workerd = require('workerd');
  const work = mkdtempSync(path.join(os.tmpdir(), 'ctxfold-edge-'));
  const storage = options.storage ?? path.join(work, 'objects');
  mkdirSync(storage, { recursive: true });
  await bundle(options.entry ?? path.join(here, 'worker.js'), work);
  const port = options.port ?? (await freePort());
  const vars = {
    SUMMARY_URL: options.summaryUrl,
    CONTEXT_WINDOW: options.contextWindow,
    KEEP_RECENT_TOKENS: options.keepRecentTokens,
  };
  writeFileSync(
    path.join(work, 'config.capnp'),
    config({ port, storage, compatibilityDate: workerd.compatibilityDate, vars }),
  );
  const origin = `http://127.0.0.1:${port}`;
  const edge = { origin, storage, pid: 0, logs: '', proc: null };

  const launch = async () => {
    const t0 = performance.now();
    const proc = spawn(workerd.default, ['serve', 'config.capnp'], { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stdout.on('data', (d) => (edge.logs += d));
    proc.stderr.on('data', (d) => (edge.logs += d));
    let exited = null;
    proc.on('exit', (code, signal) => (exited = code ?? signal));
    edge.proc = proc;
    edge.pid = proc.pid;
    for (;;) {
      if (exited !== null) throw new Error(`workerd exited with ${exited}:\n${edge.logs}`);
      if (performance.now() - t0 > 20_000) throw new Error(`workerd did not answer within 20 s:\n${edge.logs}`);
      try {
        if ((await fetch(`${origin}/`)).status === 404) return;
      } catch {
        await new Promise((r) => setTimeout(r, 25)); // not listening yet
      }
    }
  };
  const halt = async () => {
    const proc = edge.proc;
    if (proc === null || proc.exitCode !== null || proc.signalCode !== null) return;
    const gone = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    await Promise.race([gone, new Promise((r) => setTimeout(r, 5_000))]);
    if (proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGKILL');
      await gone;
    }
  };
  edge.restart = async () => {
    await halt();
    await launch();
  };
  edge.stop = async () => {
    await halt();
    rmSync(work, { recursive: true, force: true });
  };
  await launch();
  return edge;
}

/**
 * A summary endpoint for tests and demos on 127.0.0.1 (the remote endpoint protocol:
 * `{ systemPrompt, prompt, maxTokens }` → `{ summary }`), answering after `delayMs`.
 */
export async function stubSummarizer({ delayMs = 0 } = {}) {
  const requests = [];
  const srv = httpServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      requests.push({ at: performance.now(), bytes: body.length });
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ summary: `## Goal\nStub summary ${requests.length} of ${body.length} bytes.` }));
      }, delayMs);
    });
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${srv.address().port}/summary`,
    requests,
    close: () =>
      new Promise((r) => {
        srv.close(r);
        srv.closeAllConnections();
      }),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const arg = (name) => {
    const i = args.indexOf(name);
    return i < 0 ? undefined : args[i + 1];
  };
  const stub = arg('--summary-url') === undefined ? await stubSummarizer() : null;
  const edge = await startEdge({
    port: arg('--port') === undefined ? 8787 : Number(arg('--port')),
    storage: arg('--storage') ?? path.join(repo, 'tests', 'out', 'edge-objects'),
    summaryUrl: arg('--summary-url') ?? stub.url,
    contextWindow: arg('--window'),
  });
  console.log(
    `edge example on ${edge.origin} (Durable Objects in ${edge.storage}); summaries: ${stub?.url ?? arg('--summary-url')}`,
  );
  console.log(
    `version: ${JSON.parse(readFileSync(path.join(tests, 'node_modules', 'ctxfold', 'package.json'))).version}`,
  );
  const quit = async () => {
    await edge.stop();
    await stub?.close();
    process.exit(0);
  };
  process.on('SIGINT', quit);
  process.on('SIGTERM', quit);
}
