// How long it takes to get the wasm module running in Node.js (median of 20 each).
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

  // Cold start as an app sees it: a fresh process imports the package and calls version().
  const code =
    "const t0 = performance.now(); const m = await import('ctxfold'); m.version();" +
    'console.log(performance.now() - t0);';
  const times = [];
  for (let i = 0; i < 20; i++) {
    const res = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' });
    if (res.status !== 0) throw new Error(res.stderr);
    times.push(Number(res.stdout.trim()));
  }
  rows.push(timesRow("cold import('ctxfold') + version(), fresh process", times));
  return rows;
}
