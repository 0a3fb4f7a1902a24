// The package in Cloudflare's runtime: npm `workerd` (its platform binary comes with the optional
// dependency @cloudflare/workerd-<os>-<arch>) runs, on 127.0.0.1, a worker bundled by esbuild
// from a project that installed the packed tarball, with the `workerd` export condition. The
// worker takes a session JSONL by POST, builds the context, prunes (stale pass + threshold),
// serializes the conversation, renders frames and answers JSON with the frame sizes; it must get
// exactly what this process gets from pkg/. The README's worker example runs beside it and must
// answer as it does under Node.js.
//
// Timing: the worker's own performance.now() deltas are reported but not trusted (Cloudflare's
// production runtime only advances the clock on I/O; the local workerd binary does advance it).
// The test measures wall time per request from outside, and CPU time from the workerd process's
// own utime + stime in /proc/<pid>/stat (Linux) over a batch of requests.
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import * as ctxfold from 'ctxfold';
import * as aiSdk from 'ctxfold/ai-sdk';
import * as esbuild from 'esbuild';
import { toolLoop, WINDOW } from './support/ai-sdk-workload.mjs';
import { generatedSession } from './support/generated.mjs';
import { cargoVersion, testsDir } from './support/project.mjs';
import { NOW, nativeWorkload, sessionJsonl, withoutTimings, workload } from './support/runtime-workload.mjs';
import { installTarball, packTarball, tempDir } from './support/tarball.mjs';

const require = createRequire(import.meta.url);
const workloadModule = new URL('./support/runtime-workload.mjs', import.meta.url).pathname;
const aiSdkModule = new URL('./support/ai-sdk-workload.mjs', import.meta.url).pathname;

/** The workerd binary of the npm package, or why there is none. */
function findWorkerd() {
  try {
    const mod = require('workerd');
    const bin = mod.default;
    if (!existsSync(bin)) return { missing: `workerd binary not found at ${bin}` };
    return { bin, compatibilityDate: mod.compatibilityDate, version: mod.version };
  } catch (err) {
    return { missing: `npm workerd is not installed with its platform binary (${err.message.split('\n')[0]})` };
  }
}

const workerd = findWorkerd();
const skip = workerd.missing && process.env.CI !== 'true' ? `${workerd.missing}: run \`make setup\`` : false;

const session = sessionJsonl();
const expected = withoutTimings(workload(ctxfold, session, { now: NOW }));

/** The README's worker example (`<!-- readme-example: worker -->`). */
const readmeWorker = /<!-- readme-example: worker -->\n```js\n([\s\S]*?)```/.exec(
  readFileSync(new URL('../../README.md', import.meta.url), 'utf8'),
)?.[1];

const workerSource = `
import * as ctxfold from 'ctxfold';
import * as aiSdk from 'ctxfold/ai-sdk';
import { toolLoop } from ${JSON.stringify(aiSdkModule)};
import { nativeWorkload, workload } from ${JSON.stringify(workloadModule)};

export default {
  async fetch(request) {
    if (request.method !== 'POST') {
      return new Response('POST a session JSONL', { status: 405 });
    }
    const url = new URL(request.url);
    const now = Number(url.searchParams.get('now') ?? Date.now());
    if (url.pathname === '/stream') {
      // The request's body streamed into the module (Session.fromStream), never held whole here.
      try {
        const s = await ctxfold.Session.fromStream(request);
        const opened = { size: s.size, leafId: s.leafId, tokens: s.contextTokens().tokens, bytes: s.toBytes().length };
        s.free();
        return Response.json(opened);
      } catch (err) {
        return Response.json({ error: String(err.message), code: err.code ?? null }, { status: 422 });
      }
    }
    const bytes = new Uint8Array(await request.arrayBuffer());
    try {
      if (url.pathname === '/native') return Response.json(await nativeWorkload(ctxfold, bytes, { now }));
      if (url.pathname === '/ai-sdk') return Response.json(await toolLoop(aiSdk, 24));
      return Response.json(workload(ctxfold, bytes, { now }));
    } catch (err) {
      return Response.json({ error: String(err.message), code: err.code ?? null }, { status: 422 });
    }
  },
};
`;

/** A port that was free a moment ago on 127.0.0.1. */
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

/** utime + stime of a process, in ms (Linux /proc). */
let clockTicks;
function cpuMs(pid) {
  if (!existsSync(`/proc/${pid}/stat`)) return Number.NaN; // not Linux: CPU time not measured
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state): utime is field 14, stime field 15.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicks;
}

let tmp;
let proc;
let origin;
let readmeOrigin;
let logs = '';
let startup = {};

before(async () => {
  if (workerd.missing) return;
  tmp = tempDir('workerd');
  const project = path.join(tmp.dir, 'worker');
  const installed = installTarball(project, packTarball(tmp.dir), { type: 'module' });
  writeFileSync(path.join(project, 'worker.mjs'), workerSource);
  writeFileSync(path.join(project, 'readme.mjs'), readmeWorker ?? '');

  // Bundle as wrangler does: the workerd condition, the `.wasm?module` import kept as a module of
  // the worker (declared as a wasm module in config.capnp), the .wasm copied next to it.
  const out = path.join(tmp.dir, 'out');
  mkdirSync(out);
  const wasmImports = [];
  const bundle = (entry, outfile) =>
    esbuild.build({
      absWorkingDir: project,
      entryPoints: [entry],
      outfile: path.join(out, outfile),
      bundle: true,
      format: 'esm',
      platform: 'neutral',
      // Wrangler's conditions: the AI SDK's dependencies pick their browser builds (no `fs`).
      conditions: ['workerd', 'worker', 'browser'],
      logLevel: 'silent',
      plugins: [
        {
          name: 'wasm-module',
          setup(build) {
            build.onResolve({ filter: /\.wasm\?module$/ }, (args) => {
              wasmImports.push(path.relative(project, path.join(args.resolveDir, args.path)));
              return { path: './ctxfold_bg.wasm', external: true };
            });
          },
        },
      ],
    });
  await bundle('worker.mjs', 'worker.js');
  await bundle('readme.mjs', 'readme.js');
  assert.deepEqual(wasmImports, [
    'node_modules/ctxfold/entries/ctxfold_bg.wasm?module',
    'node_modules/ctxfold/entries/ctxfold_bg.wasm?module',
  ]);
  copyFileSync(path.join(installed, 'entries', 'ctxfold_bg.wasm'), path.join(out, 'ctxfold_bg.wasm'));

  const port = await freePort();
  const readmePort = await freePort();
  writeFileSync(
    path.join(out, 'config.capnp'),
    `using Workerd = import "/workerd/workerd.capnp";

const config :Workerd.Config = (
  services = [ (name = "main", worker = .ctxfoldWorker), (name = "readme", worker = .readmeWorker) ],
  sockets = [
    (name = "http", address = "127.0.0.1:${port}", http = (), service = "main"),
    (name = "readme", address = "127.0.0.1:${readmePort}", http = (), service = "readme"),
  ],
);

const readmeWorker :Workerd.Worker = (
  modules = [
    (name = "readme.js", esModule = embed "readme.js"),
    (name = "ctxfold_bg.wasm", wasm = embed "ctxfold_bg.wasm"),
  ],
  compatibilityDate = "${workerd.compatibilityDate}",
);

const ctxfoldWorker :Workerd.Worker = (
  modules = [
    (name = "worker.js", esModule = embed "worker.js"),
    (name = "ctxfold_bg.wasm", wasm = embed "ctxfold_bg.wasm"),
  ],
  compatibilityDate = "${workerd.compatibilityDate}",
);
`,
  );

  const t0 = performance.now();
  proc = spawn(workerd.bin, ['serve', 'config.capnp', '--verbose'], { cwd: out, stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout.on('data', (d) => (logs += d));
  proc.stderr.on('data', (d) => (logs += d));
  let exited = null;
  proc.on('exit', (code, signal) => (exited = `exited with ${code ?? signal}`));
  origin = `http://127.0.0.1:${port}`;
  readmeOrigin = `http://127.0.0.1:${readmePort}`;
  // Ready when it answers the GET with its 405.
  for (;;) {
    if (exited) throw new Error(`workerd ${exited}:\n${logs}`);
    if (performance.now() - t0 > 20_000) throw new Error(`workerd did not listen within 20 s:\n${logs}`);
    try {
      const res = await fetch(origin);
      if (res.status === 405) break;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  startup = { readyMs: performance.now() - t0, cpuMs: cpuMs(proc.pid) };
});

after(async () => {
  if (proc && proc.exitCode === null) {
    const gone = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGTERM');
    await Promise.race([gone, new Promise((r) => setTimeout(r, 5_000))]);
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  }
  tmp?.remove();
});

async function post(body, path = '/') {
  const res = await fetch(`${origin}${path}?now=${NOW}`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/x-ndjson' },
  });
  return { status: res.status, json: await res.json() };
}

test(`workerd ${workerd.version ?? '(missing)'}: POST a session, get the pruned context's frames`, {
  skip,
  timeout: 60_000,
}, async (t) => {
  assert.ok(!workerd.missing, workerd.missing);
  const { status, json } = await post(session);
  assert.equal(status, 200, JSON.stringify(json));
  assert.equal(json.version, cargoVersion());
  assert.deepEqual(withoutTimings(json), expected);
  assert.ok(json.frames.length >= 2 && json.frames.every((f) => f.isPng && f.pngBytes > 0));
  // Inline imaging sent tool results as frames there too (the same base64, compared above).
  assert.ok(json.inline.toolResults.length > 0, JSON.stringify(json.inline));
  // Shake ran in the worker too (and elided what the prune left).
  assert.ok(json.shake.toolResultsDropped > 0 && json.shake.tokensFreed > 0, JSON.stringify(json.shake));
  t.diagnostic(
    `first request, in-worker performance.now() deltas: load+context+prune ${json.timings.pruneMs} ms, serialize+render ${json.timings.renderMs} ms`,
  );
  t.diagnostic(
    `workerd start to first answer: ${startup.readyMs.toFixed(0)} ms wall, ${startup.cpuMs.toFixed(0)} ms CPU (process, incl. wasm compile)`,
  );
});

test('workerd: the provider-native lanes (OpenAI V1, V2, Anthropic) compact and replay as under Node.js', {
  skip,
  timeout: 60_000,
}, async () => {
  assert.ok(!workerd.missing, workerd.missing);
  // A usage of 59,000 tokens on the last turn: eligible for Anthropic server compaction.
  const text = sessionJsonl({ turns: 20, lineRepeat: 40 });
  const want = await nativeWorkload(ctxfold, text, { now: NOW });
  const { status, json } = await post(text, '/native');
  assert.equal(status, 200, JSON.stringify(json));
  assert.deepEqual(json, want);
  // Each lane answered through the fake provider and wrote its own record, replayed for its reader.
  assert.deepEqual(
    json.calls.map((c) => c.path),
    ['/v1/responses/compact', '/v1/responses', '/v1/messages'],
  );
  for (const lane of ['v1', 'v2', 'anthropic']) assert.equal(json[lane].method, 'remote', lane);
  assert.equal(json.v1.record.compactionItem.encrypted_content, 'ENC-V1');
  // The compaction item, then the anchors of the compacted region as a developer message.
  const history = json.v2.record.replacementHistory;
  assert.equal(history.at(-2).encrypted_content, 'ENC-V2');
  assert.equal(history.at(-1).role, 'developer');
  assert.match(history.at(-1).content[0].text, /^<anchors>/);
  assert.equal(json.v2.record.usedTokens, 4321);
  assert.equal(json.anthropic.record.encryptedContent, 'SIG==');
  assert.deepEqual(
    [json.v1.replayed, json.v2.replayed, json.anthropic.replayed],
    ['openaiResponsesHistory', 'openaiResponsesHistory', 'anthropicCompaction'],
  );
});

test('workerd: ctxfold/ai-sdk keeps an AI SDK tool loop under its window as under Node.js', {
  skip,
  timeout: 60_000,
}, async () => {
  assert.ok(!workerd.missing, workerd.missing);
  const want = await toolLoop(aiSdk, 24);
  const { status, json } = await post('', '/ai-sdk');
  assert.equal(status, 200, JSON.stringify(json));
  assert.deepEqual(json, want);
  assert.ok(json.largestPrompt <= WINDOW && json.methods.length >= 2, JSON.stringify(json.methods));
});

test('workerd: Session.fromStream opens a POSTed body as fromJsonl opens its bytes', {
  skip,
  timeout: 60_000,
}, async () => {
  // A small body, and a 6 MB one whose lines are read while the rest of it arrives.
  for (const body of [session, generatedSession('transcript-2k.jsonl', ['--entries', '2000', '--seed', '9'])]) {
    const s = ctxfold.Session.fromJsonl(body);
    const expected = { size: s.size, leafId: s.leafId, tokens: s.contextTokens().tokens, bytes: s.toBytes().length };
    s.free();
    const { status, json } = await post(body, '/stream');
    assert.equal(status, 200, JSON.stringify(json));
    assert.deepEqual(json, expected);
  }
  const bad = await post('not a session', '/stream');
  assert.equal(bad.status, 422);
  assert.equal(bad.json.code, 'E_NOT_A_SESSION');
});

test('workerd: a file that is not a session is a 422 with the error code', { skip, timeout: 30_000 }, async () => {
  assert.ok(!workerd.missing, workerd.missing);
  const { status, json } = await post('{"type":"message","id":"x"}\n');
  assert.equal(status, 422);
  assert.equal(json.code, 'E_NOT_A_SESSION', JSON.stringify(json));
  // The isolate survives the error: the next request works.
  const again = await post(session);
  assert.equal(again.status, 200);
});

test('workerd: wall and CPU time per request', { skip, timeout: 60_000 }, async (t) => {
  assert.ok(!workerd.missing, workerd.missing);
  const n = 10;
  const walls = [];
  const inWorker = [];
  const cpu0 = cpuMs(proc.pid);
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const { status, json } = await post(session);
    walls.push(performance.now() - t0);
    assert.equal(status, 200);
    inWorker.push(json.timings.pruneMs + json.timings.renderMs);
  }
  const cpuPerRequest = (cpuMs(proc.pid) - cpu0) / n;
  walls.sort((a, b) => a - b);
  const median = walls[Math.floor(n / 2)];
  t.diagnostic(
    `workerd, ${n} requests of ${(session.length / 1024).toFixed(0)} KiB: wall min ${walls[0].toFixed(1)} / median ${median.toFixed(1)} / max ${walls.at(-1).toFixed(1)} ms; ` +
      `CPU ${cpuPerRequest.toFixed(1)} ms per request (workerd process utime+stime, ${1000 / clockTicks} ms ticks); ` +
      `in-worker performance.now() median ${inWorker.sort((a, b) => a - b)[Math.floor(n / 2)]} ms`,
  );
  // Far below Workers' limits and this test's timeout; a sanity bound, not a benchmark.
  assert.ok(median < 5_000, `median ${median} ms`);
});

test('workerd: the README worker example answers as it does under Node.js', { skip, timeout: 60_000 }, async () => {
  assert.ok(readmeWorker, 'README.md has a `<!-- readme-example: worker -->` block');
  // The same module under Node.js (Request and Response are globals there too), with the
  // package of this repository.
  const file = path.join(testsDir, '.readme-worker.mjs');
  writeFileSync(file, readmeWorker);
  let want;
  try {
    const { default: worker } = await import(`${pathToFileURL(file).href}?t=${Date.now()}`);
    const res = await worker.fetch(new Request('http://local/', { method: 'POST', body: session }));
    assert.equal(res.status, 200);
    want = await res.json();
  } finally {
    rmSync(file, { force: true });
  }
  assert.ok(want.tokensAfter < want.tokensBefore, JSON.stringify(want));
  const res = await fetch(readmeOrigin, { method: 'POST', body: session });
  assert.equal(res.status, 200);
  assert.deepEqual(await res.json(), want);
  // Bad input is a 422 with the error code, and the worker keeps serving.
  const bad = await fetch(readmeOrigin, { method: 'POST', body: 'not a session' });
  assert.equal(bad.status, 422);
  assert.equal((await bad.json()).code, 'E_NOT_A_SESSION');
});
