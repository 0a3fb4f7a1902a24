// The browser/default and workerd/edge-light entries, each in a fresh Node.js process that
// resolves the package with that runtime's export condition.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cargoVersion, testsDir } from './support/project.mjs';

const registerWasmModule = fileURLToPath(new URL('./support/register-wasm-module.mjs', import.meta.url));

/** Runs `code` as an ES module in a child Node.js; returns its parsed last stdout line. */
function run(code, nodeArgs = []) {
  const child = spawnSync(
    process.execPath,
    // No eval / new Function anywhere in the package (workerd forbids it).
    ['--disallow-code-generation-from-strings', ...nodeArgs, '--input-type=module', '-e', code],
    { cwd: testsDir, encoding: 'utf8', timeout: 30_000 },
  );
  assert.equal(child.status, 0, `child failed:\n${child.stdout}\n${child.stderr}`);
  const lines = child.stdout.trim().split('\n');
  return JSON.parse(lines.at(-1));
}

const wasmBytes = `
  import { readFileSync } from 'node:fs';
  import { fileURLToPath } from 'node:url';
  const wasmPath = fileURLToPath(import.meta.resolve('ctxfold/wasm'));
  const bytes = readFileSync(wasmPath);
`;

test('browser entry: the API throws E_NOT_INITIALISED before init()', () => {
  const out = run(
    `import { version } from 'ctxfold';
     try { version(); console.log(JSON.stringify({ threw: false })); }
     catch (err) { console.log(JSON.stringify({ threw: true, code: err.code })); }`,
    ['--conditions=browser'],
  );
  assert.deepEqual(out, { threw: true, code: 'E_NOT_INITIALISED' });
});

for (const [name, input] of [
  ['ArrayBuffer', 'bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)'],
  ['Uint8Array', 'new Uint8Array(bytes)'],
  ['WebAssembly.Module', 'new WebAssembly.Module(bytes)'],
  ['Response', "new Response(bytes, { headers: { 'content-type': 'application/wasm' } })"],
  ['Promise<Response>', "Promise.resolve(new Response(bytes, { headers: { 'content-type': 'application/wasm' } }))"],
]) {
  test(`browser entry: init(${name}) then version()`, () => {
    const out = run(
      `${wasmBytes}
       import { init, version } from 'ctxfold';
       const resolved = import.meta.resolve('ctxfold');
       await init(${input});
       await init(); // later calls reuse the first load
       console.log(JSON.stringify({ resolved, version: version() }));`,
      ['--conditions=browser'],
    );
    assert.match(out.resolved, /\/web\.js$/);
    assert.equal(out.version, cargoVersion());
  });
}

test('browser entry: initSync(bytes)', () => {
  const out = run(
    `${wasmBytes}
     import { initSync, version } from 'ctxfold';
     initSync(bytes);
     console.log(JSON.stringify({ version: version() }));`,
    ['--conditions=browser'],
  );
  assert.equal(out.version, cargoVersion());
});

test('browser entry: a failed init() rejects and can be retried', () => {
  const out = run(
    `${wasmBytes}
     import { init, version } from 'ctxfold';
     let first;
     try { await init(new Response('nope', { status: 404 })); first = 'resolved'; }
     catch (err) { first = 'rejected'; }
     await init(bytes);
     console.log(JSON.stringify({ first, version: version() }));`,
    ['--conditions=browser'],
  );
  assert.deepEqual(out, { first: 'rejected', version: cargoVersion() });
});

for (const condition of ['workerd', 'edge-light']) {
  test(`${condition} entry: ready at import from a .wasm module import, no fetch`, () => {
    const out = run(
      `globalThis.fetch = () => { throw new Error('the ${condition} entry must not fetch'); };
       const { version, init } = await import('ctxfold');
       await init();
       console.log(JSON.stringify({ resolved: import.meta.resolve('ctxfold'), version: version() }));`,
      [`--conditions=${condition}`, '--import', registerWasmModule],
    );
    assert.match(out.resolved, /\/workerd\.js$/);
    assert.equal(out.version, cargoVersion());
  });
}
