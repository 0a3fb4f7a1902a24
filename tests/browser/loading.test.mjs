// How the browser entry gets its WebAssembly module (issue 42 item 3), in headless Chromium: the
// default `init()` compiles while the .wasm streams in (`WebAssembly.instantiateStreaming`, the
// server sending `application/wasm`), and a page that compiled the module once hands it to its
// workers, which set ctxfold up from it (`initSync(module)` or `await init(module)`) without
// fetching or compiling it again.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { cargoVersion, pkgDir } from '../js/support/project.mjs';
import { useChromium, withPage } from './support.mjs';

const harness = useChromium({ '/': fileURLToPath(new URL('./loading-page/', import.meta.url)), '/pkg/': pkgDir });

/** Runs `scenario` on a fresh page; its result and the .wasm requests the page and its workers made. */
async function scenario(name) {
  let result;
  const wasmRequests = [];
  await withPage(harness.browser, async (page, problems) => {
    page.on('request', (req) => req.url().endsWith('.wasm') && wasmRequests.push(req.url()));
    await page.goto(harness.server.url);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
    result = await page.evaluate((n) => window.runScenario(n), name);
    result.calls = await page.evaluate(() => window.wasmCalls);
    assert.deepEqual(problems, []);
  });
  return { ...result, wasmRequests };
}

test('Chromium: init() compiles the module while it streams in', async () => {
  const { version, calls, wasmRequests } = await scenario('streaming');
  assert.equal(version, cargoVersion());
  // One streaming instantiation from the fetch's Response, no fallback to the bytes.
  assert.deepEqual(calls, ['instantiateStreaming(response)']);
  assert.equal(wasmRequests.length, 1);
});

test('Chromium: a page compiles once and hands the WebAssembly.Module to its workers', async () => {
  const { version, answers, calls, wasmRequests } = await scenario('workers');
  assert.equal(version, cargoVersion());
  // The page: one streaming compile, then an instantiation of the compiled module.
  assert.deepEqual(calls, ['compileStreaming(promise)', 'instantiate(module)']);
  for (const [i, how] of ['initSync', 'init'].entries()) {
    const answer = answers[i];
    assert.equal(answer.how, how);
    assert.equal(answer.isModule, true, 'the module arrives in the worker as a WebAssembly.Module');
    assert.equal(answer.version, cargoVersion());
    assert.equal(answer.entries, 1);
    assert.equal(answer.text, 'hello from the page');
    assert.deepEqual(answer.converted, [{ role: 'user', content: 'hi' }]);
    // The worker compiles nothing: it instantiates the module it was given.
    assert.ok(!answer.calls.some((c) => /compile|Streaming|\(object\)|\(string\)/.test(c)), answer.calls.join(' '));
  }
  // Only the page fetched the .wasm, once.
  assert.equal(wasmRequests.length, 1, wasmRequests.join(' '));
});
