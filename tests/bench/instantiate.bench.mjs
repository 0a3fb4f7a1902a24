// How long it takes to get the wasm module running in Node.js (median of 20 each; 10 fresh
// processes for the rows that say so).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { measure, timesRow } from './lib.mjs';

export default async function () {
  const wasmPath = fileURLToPath(import.meta.resolve('ctxfold/wasm'));
  const bytes = readFileSync(wasmPath);
  const module = new WebAssembly.Module(bytes);
  // Instantiation needs every import present; none is called before the glue's start function.
  const imports = {};
  for (const imp of WebAssembly.Module.imports(module)) {
    imports[imp.module] ??= {};
    imports[imp.module][imp.name] = () => {};
  }

  const rows = [];
  rows.push(
    await measure('compile (WebAssembly.compile)', () => WebAssembly.compile(bytes), {
      note: `${bytes.length} bytes`,
    }),
  );
  rows.push(await measure('instantiate a compiled module', () => WebAssembly.instantiate(module, imports)));
  rows.push(await measure('compile + instantiate from bytes', () => WebAssembly.instantiate(bytes, imports)));

  // The same in fresh processes: above, V8 serves every compile after the first from the module
  // it already compiled, so only a new process shows what a host that just started pays.
  // Every import a no-op function (the glue's imports are all functions; none runs here).
  const compileCode = `
import { readFileSync } from 'node:fs';
const bytes = readFileSync(process.argv[1]);
const t0 = performance.now();
const module = new WebAssembly.Module(bytes);
const t1 = performance.now();
const imports = {};
for (const imp of WebAssembly.Module.imports(module)) {
  imports[imp.module] ??= {};
  imports[imp.module][imp.name] = () => {};
}
const t2 = performance.now();
new WebAssembly.Instance(module, imports);
console.log(JSON.stringify([t1 - t0, performance.now() - t2]));
`;
  const fresh = [[], []];
  for (let i = 0; i < 10; i++) {
    const res = spawnSync(process.execPath, ['--input-type=module', '-e', compileCode, wasmPath], {
      encoding: 'utf8',
    });
    if (res.status !== 0) throw new Error(res.stderr);
    const [compile, instantiate] = JSON.parse(res.stdout.trim());
    fresh[0].push(compile);
    fresh[1].push(instantiate);
  }
  rows.push(
    timesRow('compile (new WebAssembly.Module), fresh process', fresh[0], { note: 'synchronous, as node.js does' }),
  );
  rows.push(timesRow('instantiate it, fresh process', fresh[1]));

  // Cold start as an app sees it: a fresh process imports the package and calls version(); the
  // process's CPU time over it (V8 compiles on other threads too); then its first conversion of
  // messages (the formats' code runs for the first time there; they are loaded at import) and the
  // same conversion again.
  const code = `
const c0 = process.cpuUsage();
const t0 = performance.now();
const m = await import('ctxfold');
m.version();
const t1 = performance.now();
const c = process.cpuUsage(c0);
m.Session.fromMessages([{ role: 'user', content: 'hi' }], { format: 'openai-chat' }).toMessages({ format: 'gemini' });
const t2 = performance.now();
m.Session.fromMessages([{ role: 'user', content: 'hi' }], { format: 'openai-chat' }).toMessages({ format: 'gemini' });
const t3 = performance.now();
console.log(JSON.stringify([t1 - t0, (c.user + c.system) / 1000, t2 - t1, t3 - t2]));
`;
  const cold = [[], [], [], []];
  for (let i = 0; i < 20; i++) {
    const res = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' });
    if (res.status !== 0) throw new Error(res.stderr);
    for (const [k, v] of JSON.parse(res.stdout.trim()).entries()) cold[k].push(v);
  }
  rows.push(timesRow("cold import('ctxfold') + version(), fresh process", cold[0]));
  rows.push(timesRow("cold import('ctxfold') + version(), process CPU", cold[1], { note: 'every thread' }));
  rows.push(
    timesRow('then the first conversion of messages', cold[2], {
      note: 'fromMessages (openai-chat) → toMessages (gemini), the formats loaded at import',
    }),
  );
  rows.push(timesRow('then the same conversion again', cold[3]));
  return rows;
}
