// Node.js consumers of the packed tarball: an ES module project and a CommonJS project, each in a
// temp folder of its own that ran `npm install ./ctxfold-x.y.z.tgz`. Each loads a session, builds
// the context, prunes, renders frames, and must get exactly what this process gets from pkg/;
// each also times the import (the wasm is instantiated then) and the Unifont asset.

import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import * as ctxfold from 'ctxfold';
import { cargoVersion, pkgDir } from './support/project.mjs';
import { NOW, sessionJsonl, withoutTimings, workload } from './support/runtime-workload.mjs';
import { installTarball, packTarball, tempDir } from './support/tarball.mjs';

let tmp;
let tarball;
const session = sessionJsonl();
const expected = withoutTimings(workload(ctxfold, session, { now: NOW }));

before(() => {
  tmp = tempDir('consumers');
  tarball = packTarball(tmp.dir);
  writeFileSync(path.join(tmp.dir, 'session.jsonl'), session);
});

after(() => tmp?.remove());

// The consumer's body, shared by both module systems: `ctxfold` and `resolve` are given.
const body = `
  const { readFileSync } = require('node:fs');
  const workload = ${workload.toString()};
  const session = readFileSync(process.argv[2]);
  const result = workload(ctxfold, session, { now: ${NOW} });
  const fontBytes = readFileSync(resolve('ctxfold/unifont.cxfb'));
  const t0 = performance.now();
  const glyphs = ctxfold.registerFallbackFont(fontBytes);
  const registerMs = performance.now() - t0;
  const cjkText = '漢字かなカナ 한국어 — unifont';
  const cjk = ctxfold.renderFrames(cjkText, { shape: 'unifont16-bw' })[0];
  const cjkUnrenderable = ctxfold.scanRenderability(cjkText, 'unifont16-bw').unrenderableRatio;
  ctxfold.clearFallbackFonts();
  const cjkUnrenderableWithout = ctxfold.scanRenderability(cjkText, 'unifont16-bw').unrenderableRatio;
  console.log(JSON.stringify({
    entry: resolve('ctxfold'),
    importMs,
    result,
    unifont: { glyphs, registerMs, bytes: fontBytes.byteLength, cjkChars: cjk.chars, cjkPng: cjk.png.byteLength, cjkUnrenderable, cjkUnrenderableWithout },
  }));
`;

const consumers = {
  esm: {
    manifest: { type: 'module' },
    file: 'main.js',
    source: `
      import { createRequire } from 'node:module';
      import { fileURLToPath } from 'node:url';
      const require = createRequire(import.meta.url);
      const resolve = (name) => fileURLToPath(import.meta.resolve(name));
      const t = performance.now();
      const ctxfold = await import('ctxfold');
      const importMs = performance.now() - t;
      ${body}
    `,
  },
  cjs: {
    manifest: { type: 'commonjs' },
    file: 'main.js',
    source: `
      'use strict';
      const resolve = (name) => require.resolve(name);
      const t = performance.now();
      const ctxfold = require('ctxfold'); // require() of the ES module package (Node >= 20.19)
      const importMs = performance.now() - t;
      ${body}
    `,
  },
};

for (const [name, consumer] of Object.entries(consumers)) {
  test(`Node ${process.versions.node} ${name.toUpperCase()} consumer of the packed tarball`, (t) => {
    const dir = path.join(tmp.dir, `consumer-${name}`);
    const installed = installTarball(dir, tarball, consumer.manifest);
    assert.ok(
      lstatSync(installed).isDirectory() && !lstatSync(installed).isSymbolicLink(),
      'installed from the tarball, not linked',
    );
    assert.equal(JSON.parse(readFileSync(path.join(installed, 'package.json'), 'utf8')).version, cargoVersion());
    writeFileSync(path.join(dir, consumer.file), consumer.source);

    const child = spawnSync(process.execPath, [consumer.file, path.join(tmp.dir, 'session.jsonl')], {
      cwd: dir,
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(child.status, 0, `consumer failed:\n${child.stdout}\n${child.stderr}`);
    // No ExperimentalWarning (require of ESM) or deprecation on the way.
    assert.equal(child.stderr, '');
    const out = JSON.parse(child.stdout.trim().split('\n').at(-1));

    assert.equal(out.entry, path.join(installed, 'entries', 'node.js'));
    assert.deepEqual(withoutTimings(out.result), expected);
    assert.equal(out.result.version, cargoVersion());
    assert.ok(
      out.result.frames.length >= 2 && out.result.frames.every((f) => f.isPng),
      JSON.stringify(out.result.frames),
    );
    assert.ok(out.result.stale.prunedCount > 0 && out.result.threshold.prunedCount > 0);
    assert.ok(out.unifont.glyphs > 50_000, `${out.unifont.glyphs} glyphs`);
    // The CJK and Hangul glyphs print only with the registered Unifont asset.
    assert.equal(out.unifont.cjkUnrenderable, 0);
    assert.ok(out.unifont.cjkUnrenderableWithout > 0.3, JSON.stringify(out.unifont));
    assert.equal(out.unifont.cjkChars, [...'漢字かなカナ 한국어 — unifont'].length);

    const ms = (x) => `${x.toFixed(1)} ms`;
    t.diagnostic(
      `${name}: import (wasm instantiate) ${ms(out.importMs)}, prune ${ms(out.result.timings.pruneMs)}, ` +
        `render ${ms(out.result.timings.renderMs)}, Unifont register ${ms(out.unifont.registerMs)} ` +
        `(${(out.unifont.bytes / 1024).toFixed(0)} KiB, ${out.unifont.glyphs} glyphs)`,
    );
  });
}

test('the README install from a build: `npm install <path to pkg>` in a project of its own', () => {
  const dir = path.join(tmp.dir, 'from-build');
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ name: 'from-build', private: true, type: 'module' }));
  // As the README says (after `make pkg`); the folder has no dependencies: nothing is fetched.
  execFileSync('npm', ['install', pkgDir, '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 60_000,
  });
  writeFileSync(
    path.join(dir, 'main.js'),
    "import { Session, version } from 'ctxfold';\nconsole.log(version(), Session.create().size);\n",
  );
  const child = spawnSync(process.execPath, ['main.js'], { cwd: dir, encoding: 'utf8', timeout: 30_000 });
  assert.equal(child.status, 0, child.stderr);
  assert.equal(child.stdout.trim(), `${cargoVersion()} 0`);
});
