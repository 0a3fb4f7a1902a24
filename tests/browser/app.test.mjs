// A small browser app, bundled by esbuild from a project that installed the packed tarball
// (`npm install ./ctxfold-x.y.z.tgz`), served on 127.0.0.1 and driven in Debian's Chromium: the
// user picks a session file, the app builds the context, prunes, renders frames and shows them as
// images. The numbers must equal what this process gets from pkg/ under Node.js. The app also
// times `await init()` (fetch + compile + instantiate of the wasm), cold and warm, and the
// optional Unifont asset (fetch + registerFallbackFont), imported through `ctxfold/unifont.cxfb`.
// The page with its frames is saved as tests/out/screenshots/app-frames.png. The README's browser
// example is bundled and run beside it.

import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import * as ctxfold from 'ctxfold';
import * as esbuild from 'esbuild';
import { cargoVersion, outDir } from '../js/support/project.mjs';
import { NOW, sessionJsonl, withoutTimings, workload } from '../js/support/runtime-workload.mjs';
import { installTarball, packTarball, tempDir } from '../js/support/tarball.mjs';
import { CHROMIUM, launchChromium, serveMounts, watchPage } from './support.mjs';

const haveChromium = existsSync(CHROMIUM);
if (!haveChromium && process.env.CI === 'true') throw new Error(`Chromium not found at ${CHROMIUM}`);
const skip = haveChromium ? false : `Chromium not found at ${CHROMIUM}: run \`make setup\``;

const workloadModule = new URL('../js/support/runtime-workload.mjs', import.meta.url).pathname;
const session = sessionJsonl();
const expected = withoutTimings(workload(ctxfold, session, { now: NOW }));

/** The README's browser example (`<!-- readme-example: browser -->`). */
const readmeBrowser = /<!-- readme-example: browser -->\n```js\n([\s\S]*?)```/.exec(
  readFileSync(new URL('../../README.md', import.meta.url), 'utf8'),
)?.[1];

const html = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><link rel="icon" href="data:,"><title>ctxfold app</title></head>
<body>
  <h1>ctxfold app</h1>
  <p id="status">loading</p>
  <input type="file" id="file" accept=".jsonl,application/x-ndjson">
  <button id="unifont">Load Unifont</button>
  <pre id="result"></pre>
  <div id="frames"></div>
  <script type="module" src="./app.js"></script>
</body>
</html>
`;

const app = `
import * as ctxfold from 'ctxfold';
import unifontUrl from 'ctxfold/unifont.cxfb';
import { workload } from ${JSON.stringify(workloadModule)};

const $ = (id) => document.getElementById(id);
window.timings = {};

const t0 = performance.now();
await ctxfold.init();
window.timings.initMs = performance.now() - t0;
const wasm = performance.getEntriesByType('resource').find((e) => e.name.endsWith('.wasm'));
window.timings.wasmTransferBytes = wasm?.transferSize ?? null;
$('status').textContent = 'ctxfold ' + ctxfold.version();

$('file').addEventListener('change', async () => {
  const file = $('file').files[0];
  $('status').textContent = 'working';
  const bytes = new Uint8Array(await file.arrayBuffer());
  let frames;
  const result = workload(ctxfold, bytes, { now: ${NOW}, onFrames: (f) => (frames = f) });
  $('result').textContent = JSON.stringify(result, null, 2);
  $('frames').replaceChildren();
  await Promise.all(frames.map((f) => {
    const img = new Image();
    img.src = URL.createObjectURL(new Blob([f.png], { type: 'image/png' }));
    img.alt = f.chars + ' characters';
    $('frames').append(img);
    return img.decode();
  }));
  window.result = result;
  $('status').textContent = 'done';
});

$('unifont').addEventListener('click', async () => {
  const t = performance.now();
  const bytes = await (await fetch(unifontUrl)).arrayBuffer();
  const fetched = performance.now();
  const glyphs = ctxfold.registerFallbackFont(bytes);
  const done = performance.now();
  const text = '漢字かなカナ 한국어 — unifont';
  window.unifont = {
    url: unifontUrl,
    bytes: bytes.byteLength,
    glyphs,
    fetchMs: fetched - t,
    registerMs: done - fetched,
    unrenderable: ctxfold.scanRenderability(text, 'unifont16-bw').unrenderableRatio,
    chars: ctxfold.renderFrames(text, { shape: 'unifont16-bw' })[0].chars,
  };
  $('status').textContent = 'unifont ' + glyphs;
});
`;

let tmp;
let server;
let browser;
let sessionFile;
let outputs;

before(async () => {
  if (!haveChromium) return;
  tmp = tempDir('browser-app');
  const project = path.join(tmp.dir, 'app');
  const installed = installTarball(project, packTarball(tmp.dir), { type: 'module' });
  writeFileSync(path.join(project, 'app.mjs'), app);
  const dist = path.join(tmp.dir, 'dist');
  mkdirSync(dist);
  const result = await esbuild.build({
    absWorkingDir: project,
    entryPoints: ['app.mjs'],
    outfile: path.join(dist, 'app.js'),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    loader: { '.cxfb': 'file' },
    assetNames: '[name]-[hash]',
    metafile: true,
    logLevel: 'silent',
  });
  outputs = Object.keys(result.metafile.outputs).map((p) => path.basename(p));
  // esbuild leaves `new URL('./ctxfold_bg.wasm', import.meta.url)` alone: the app ships the
  // .wasm next to its bundle, as the package README says for bundlers without asset URLs.
  copyFileSync(path.join(installed, 'entries', 'ctxfold_bg.wasm'), path.join(dist, 'ctxfold_bg.wasm'));
  writeFileSync(path.join(dist, 'index.html'), html);
  // The README example, bundled the same way, in its own folder with a session file.
  writeFileSync(path.join(project, 'readme.mjs'), readmeBrowser ?? '');
  const readmeDir = path.join(dist, 'readme');
  mkdirSync(readmeDir);
  await esbuild.build({
    absWorkingDir: project,
    entryPoints: ['readme.mjs'],
    outfile: path.join(readmeDir, 'main.js'),
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    logLevel: 'silent',
  });
  copyFileSync(path.join(installed, 'entries', 'ctxfold_bg.wasm'), path.join(readmeDir, 'ctxfold_bg.wasm'));
  writeFileSync(path.join(readmeDir, 'session.jsonl'), session);
  writeFileSync(
    path.join(readmeDir, 'index.html'),
    '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>README example</title><script type="module" src="./main.js"></script>\n',
  );
  sessionFile = path.join(tmp.dir, 'session.jsonl');
  writeFileSync(sessionFile, session);
  server = await serveMounts({ '/': dist });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
  tmp?.remove();
});

/** `await init()` times of every page opened, in order (the first one had an empty HTTP cache). */
const initTimes = [];

async function openApp() {
  const page = await browser.context.newPage();
  const problems = watchPage(page);
  await page.goto(server.url);
  await page.waitForFunction(() => document.getElementById('status')?.textContent.startsWith('ctxfold '), null, {
    timeout: 20_000,
  });
  initTimes.push(await page.evaluate(() => window.timings));
  return { page, problems };
}

test('esbuild app: the bundle, the wasm next to it, the Unifont asset emitted', { skip }, () => {
  assert.ok(outputs.includes('app.js'), outputs.join(' '));
  assert.ok(
    outputs.some((f) => /^unifont-[A-Z0-9]+\.cxfb$/.test(f)),
    outputs.join(' '),
  );
  const bundle = readFileSync(path.join(tmp.dir, 'dist', 'app.js'), 'utf8');
  assert.doesNotMatch(bundle, /node:fs|require\(/);
  assert.deepEqual(
    readdirSync(path.join(tmp.dir, 'dist')).filter((f) => f.endsWith('.wasm')),
    ['ctxfold_bg.wasm'],
  );
});

test('Chromium: load a session, build the context, prune, render frames', { skip, timeout: 60_000 }, async (t) => {
  const { page, problems } = await openApp();
  try {
    assert.equal(await page.textContent('#status'), `ctxfold ${cargoVersion()}`);
    await page.setInputFiles('#file', sessionFile);
    await page.waitForFunction(() => document.getElementById('status').textContent === 'done', null, {
      timeout: 30_000,
    });
    const result = await page.evaluate(() => window.result);
    assert.deepEqual(withoutTimings(result), expected);
    assert.deepEqual(JSON.parse(await page.textContent('#result')), result);
    // The frames are shown as images the browser decoded, at the rendered sizes.
    const images = await page.$$eval('#frames img', (imgs) =>
      imgs.map((i) => ({ width: i.naturalWidth, height: i.naturalHeight, alt: i.alt })),
    );
    assert.deepEqual(
      images,
      expected.frames.map((f) => ({ width: f.width, height: f.height, alt: `${f.chars} characters` })),
    );
    assert.deepEqual(problems, []);
    mkdirSync(path.join(outDir, 'screenshots'), { recursive: true });
    await page.screenshot({ path: path.join(outDir, 'screenshots', 'app-frames.png'), fullPage: true });
    t.diagnostic(
      `Chromium: load+context+prune ${result.timings.pruneMs.toFixed(1)} ms, serialize+render ${result.timings.renderMs.toFixed(1)} ms`,
    );
  } finally {
    await page.close();
  }
});

test('Chromium: init() time cold and warm; the Unifont asset', { skip, timeout: 60_000 }, async (t) => {
  const first = await openApp();
  await first.page.click('#unifont');
  await first.page.waitForFunction(() => document.getElementById('status').textContent.startsWith('unifont '), null, {
    timeout: 30_000,
  });
  const unifont = await first.page.evaluate(() => window.unifont);
  assert.deepEqual(first.problems, []);
  await first.page.close();
  for (let i = 0; i < 3; i++) {
    const again = await openApp();
    assert.deepEqual(again.problems, []);
    await again.page.close();
  }
  const [cold, ...warm] = initTimes;

  assert.match(unifont.url, /\/unifont-[A-Z0-9]+\.cxfb$/);
  assert.equal(
    unifont.bytes,
    readFileSync(path.join(tmp.dir, 'app', 'node_modules', 'ctxfold', 'unifont.cxfb')).byteLength,
  );
  assert.ok(unifont.glyphs > 50_000, `${unifont.glyphs} glyphs`);
  assert.equal(unifont.unrenderable, 0);
  assert.equal(unifont.chars, [...'漢字かなカナ 한국어 — unifont'].length);
  const ms = (x) => `${x.toFixed(1)} ms`;
  t.diagnostic(
    `Chromium init(): first page ${ms(cold.initMs)} (wasm fetched: ${cold.wasmTransferBytes} B), ` +
      `later pages ${warm.map((w) => ms(w.initMs)).join(', ')} (HTTP cache)`,
  );
  t.diagnostic(
    `Chromium Unifont: fetch ${ms(unifont.fetchMs)}, registerFallbackFont ${ms(unifont.registerMs)} (${unifont.bytes} B, ${unifont.glyphs} glyphs)`,
  );
});

test('Chromium: the README browser example shows the frames it says', { skip, timeout: 60_000 }, async () => {
  assert.ok(readmeBrowser, 'README.md has a `<!-- readme-example: browser -->` block');
  const page = await browser.context.newPage();
  const problems = watchPage(page);
  try {
    const logged = page.waitForEvent('console', { predicate: (m) => m.text().startsWith('{'), timeout: 20_000 });
    await page.goto(`${server.url}readme/`);
    const got = JSON.parse((await logged).text());
    // The same calls under Node.js.
    const s = ctxfold.Session.fromJsonl(session);
    const frames = ctxfold.renderFrames(ctxfold.serializeConversation(s.toLlmMessages()), { shape: '8on22-bw' });
    assert.deepEqual(got, { entries: s.size, tokens: s.contextTokens().tokens, frames: frames.length });
    const widths = await page.$$eval('img', (imgs) =>
      Promise.all(imgs.map((i) => i.decode().then(() => i.naturalWidth))),
    );
    assert.deepEqual(
      widths,
      frames.map((f) => f.width),
    );
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});
