// The browser entry of the built package in headless Chromium: every way of calling init(),
// then version().

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cargoVersion } from '../js/support/project.mjs';
import { PAGE_MOUNTS, useChromium, withPage } from './support.mjs';

const harness = useChromium(PAGE_MOUNTS);

for (const scenario of ['default', 'url', 'response', 'bytes', 'module']) {
  test(`Chromium: init() from ${scenario}, then version()`, async () => {
    await withPage(harness.browser, async (page, problems) => {
      await page.goto(harness.server.url);
      await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
      const result = await page.evaluate((name) => window.runScenario(name), scenario);
      assert.deepEqual(result, { before: 'E_NOT_INITIALISED', version: cargoVersion() });
      assert.equal(await page.textContent('#status'), `ctxfold ${cargoVersion()}`);
      // e.g. a wrong MIME type makes instantiateStreaming warn and fall back.
      assert.deepEqual(problems, []);
    });
  });
}

test('server: the .wasm is served as application/wasm', async () => {
  const res = await fetch(new URL('/pkg/entries/ctxfold_bg.wasm', harness.server.url));
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/wasm');
  const traversal = await fetch(new URL('/pkg/%2e%2e/Cargo.toml', harness.server.url));
  assert.notEqual(traversal.status, 200);
});
