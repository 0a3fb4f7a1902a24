// snapcompact in headless Chromium: frames rendered by the web entry decode with the
// browser's own PNG decoder, the Unifont asset registers from fetch(), errors carry codes.

import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { pkgDir, repoDir } from '../js/support/project.mjs';
import { useChromium, withPage } from './support.mjs';

const harness = useChromium({
  '/': fileURLToPath(new URL('./snapcompact-page/', import.meta.url)),
  '/pkg/': pkgDir,
  '/fonts/': path.join(repoDir, 'fonts/compiled'),
});

test('Chromium: renderFrames, registerFallbackFont, decoded frames', async () => {
  await withPage(harness.browser, async (page, problems) => {
    await page.goto(harness.server.url);
    await page.waitForFunction(() => document.getElementById('status')?.textContent === 'ready');
    const r = await page.evaluate(() => window.snapcompact());
    assert.equal(r.count, 1);
    assert.equal(r.frameCount, 1);
    assert.equal(r.first.width, 320);
    assert.equal(r.first.height, 64);
    assert.ok(r.first.inked > 500, `${r.first.inked} inked pixels`);
    assert.deepEqual(r.first.probes[0], [255, 255, 255]);
    assert.ok(r.glyphs > 50000);
    assert.equal(r.cjk.page, '你好,世界');
    assert.equal(r.cjk.chars, 5);
    assert.equal(r.cjk.width, 128);
    assert.ok(r.cjk.inked > 100);
    assert.equal(r.code, 'E_SHAPE');
    assert.deepEqual(problems, []);
  });
});
