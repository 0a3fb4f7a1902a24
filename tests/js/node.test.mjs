// The package's Node.js entry, imported by name through its `exports` map (tests/node_modules/
// ctxfold is a link to pkg/, made by `make pkg`).

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import * as ctxfold from 'ctxfold';
import { cargoVersion, pkgDir } from './support/project.mjs';

test('version() of the node entry is the Cargo.toml version', () => {
  assert.equal(ctxfold.version(), cargoVersion());
});

test('package.json carries the Cargo.toml version', () => {
  const manifest = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
  assert.equal(manifest.name, 'ctxfold');
  assert.equal(manifest.version, cargoVersion());
  assert.equal(manifest.type, 'module');
});

test('the "node" condition resolves to node.js, "./wasm" to the module', () => {
  assert.equal(fileURLToPath(import.meta.resolve('ctxfold')), path.join(pkgDir, 'entries', 'node.js'));
  const wasmPath = fileURLToPath(import.meta.resolve('ctxfold/wasm'));
  assert.equal(wasmPath, path.join(pkgDir, 'entries', 'ctxfold_bg.wasm'));
  assert.ok(WebAssembly.validate(readFileSync(wasmPath)), 'ctxfold/wasm is a valid module');
});

test('the module is ready at import; init() resolves anyway', async () => {
  assert.equal(await ctxfold.init(), undefined);
  assert.equal(ctxfold.version(), cargoVersion());
});

test('require("ctxfold") gives the same module instance (require of ESM)', () => {
  const require = createRequire(import.meta.url);
  const required = require('ctxfold');
  assert.equal(required.version, ctxfold.version);
  assert.equal(required.version(), cargoVersion());
});

test('npm pack ships every file of pkg/', () => {
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: pkgDir,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const packed = JSON.parse(out)[0]
    .files.map((f) => f.path)
    .sort();
  const built = readdirSync(pkgDir, { recursive: true })
    .map(String)
    .filter((f) => statSync(path.join(pkgDir, f)).isFile())
    .map((f) => f.split(path.sep).join('/'))
    .sort();
  assert.deepEqual(packed, built);
});

test('the optional Unifont asset is its own subpath and registers', async () => {
  const { readFileSync: read } = await import('node:fs');
  const file = fileURLToPath(import.meta.resolve('ctxfold/unifont.cxfb'));
  assert.equal(file, path.join(pkgDir, 'unifont.cxfb'));
  const glyphs = ctxfold.registerFallbackFont(read(file));
  assert.ok(glyphs > 50_000, `${glyphs} glyphs`);
  ctxfold.clearFallbackFonts();
});
