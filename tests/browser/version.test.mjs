// The browser entry of the built package in headless Chromium: every way of calling init(),
// then version().
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { cargoVersion, pkgDir } from '../js/support/project.mjs';
import { launchChromium, serveMounts, watchPage } from './support.mjs';

let browser;
let server;

before(async () => {
  server = await serveMounts({ '/': fileURLToPath(new URL('./page/', import.meta.url)), '/pkg/': pkgDir });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

for (const scenario of ['default', 'url', 'response', 'bytes', 'module']) {
  test(`Chromium: init() from ${scenario}, then version()`, async () => {
    const page = await browser.context.newPage();
    const problems = watchPage(page);
    try {
      await page.goto(server.url);
      await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
      const result = await page.evaluate((name) => window.runScenario(name), scenario);
      assert.deepEqual(result, { before: 'E_NOT_INITIALISED', version: cargoVersion() });
      assert.equal(await page.textContent('#status'), `ctxfold ${cargoVersion()}`);
      // e.g. a wrong MIME type makes instantiateStreaming warn and fall back.
      assert.deepEqual(problems, []);
    } finally {
      await page.close();
    }
  });
}

test('server: the .wasm is served as application/wasm', async () => {
  const res = await fetch(new URL('/pkg/ctxfold_bg.wasm', server.url));
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/wasm');
  const traversal = await fetch(new URL('/pkg/%2e%2e/Cargo.toml', server.url));
  assert.notEqual(traversal.status, 200);
});
