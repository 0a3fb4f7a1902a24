// The package as bundlers see it: esbuild resolves the right entry per platform / condition and
// the browser bundle keeps the `new URL('./ctxfold_bg.wasm', import.meta.url)` asset reference.

import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import * as esbuild from 'esbuild';
import { testsDir } from './support/project.mjs';

const consumer = "import { init, version } from 'ctxfold'; await init(); console.log(version());";

async function bundle(options) {
  const result = await esbuild.build({
    stdin: { contents: consumer, resolveDir: testsDir, sourcefile: 'consumer.mjs' },
    bundle: true,
    write: false,
    format: 'esm',
    metafile: true,
    logLevel: 'silent',
    ...options,
  });
  const inputs = Object.keys(result.metafile.inputs).map((p) => path.basename(p));
  return { inputs, text: result.outputFiles[0].text };
}

test('bundle for the browser: web entry, no Node.js built-ins', async () => {
  const { inputs, text } = await bundle({ platform: 'browser' });
  assert.ok(inputs.includes('web.js'), inputs.join(' '));
  assert.ok(inputs.includes('glue.js'), inputs.join(' '));
  assert.doesNotMatch(text, /node:fs|require\(/);
  assert.match(text, /new URL\(["']\.\/ctxfold_bg\.wasm["'], import\.meta\.url\)/);
});

test('bundle for Node.js: node entry, the wasm read from disk next to it', async () => {
  const { inputs, text } = await bundle({ platform: 'node' });
  assert.ok(inputs.includes('node.js'), inputs.join(' '));
  assert.ok(inputs.includes('glue.js'), inputs.join(' '));
  assert.match(text, /readFileSync\(new URL\(["']\.\/ctxfold_bg\.wasm["'], import\.meta\.url\)\)/);
});

for (const condition of ['workerd', 'edge-light']) {
  test(`bundle with the ${condition} condition: workerd entry, wasm imported as a module`, async () => {
    const wasmImports = [];
    const { inputs } = await bundle({
      platform: 'neutral',
      conditions: [condition],
      plugins: [
        {
          // What wrangler / the Vercel builder do with `.wasm?module`: a compiled-module import.
          name: 'wasm-module',
          setup(build) {
            build.onResolve({ filter: /\.wasm\?module$/ }, (args) => {
              wasmImports.push(args.path);
              return { path: args.path, external: true };
            });
          },
        },
      ],
    });
    assert.ok(inputs.includes('workerd.js'), inputs.join(' '));
    assert.deepEqual(wasmImports, ['./ctxfold_bg.wasm?module']);
  });
}
