// The demo page (www/) in headless Chromium: it loads the bundled sample session with the
// built package and shows the entry count, the active path and the context token estimate —
// the same figures the Node build computes for the same file.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Session } from 'ctxfold';
import { outDir, pkgDir, repoDir } from '../js/support/project.mjs';
import { launchChromium, serveMounts, watchPage } from './support.mjs';

const sampleDir = path.join(outDir, 'sample');
const sampleFile = path.join(sampleDir, 'sample.jsonl');

let browser;
let server;

before(async () => {
  if (!existsSync(sampleFile)) {
    mkdirSync(sampleDir, { recursive: true });
    const res = spawnSync(
      'cargo',
      ['run', '--quiet', '--features', 'testkit', '--bin', 'gen-session', '--', '--preset', 'sample', '--out', sampleFile],
      { cwd: repoDir, stdio: ['ignore', 'inherit', 'inherit'] },
    );
    assert.equal(res.status, 0, 'gen-session');
  }
  server = await serveMounts({
    '/': fileURLToPath(new URL('../../www/', import.meta.url)),
    '/pkg/': pkgDir,
    '/sample/': sampleDir + path.sep,
  });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

test('the demo shows the bundled sample session', async () => {
  const bytes = readFileSync(sampleFile);
  const s = Session.fromJsonl(bytes);
  const want = {
    entries: s.size.toLocaleString('en-US'),
    path: `${s.pathTo(s.leafId).length.toLocaleString('en-US')} entries`,
    messages: s.buildContext().messages.length.toLocaleString('en-US'),
    tokens: s.contextTokens().estimatedTokens.toLocaleString('en-US'),
  };
  const page = await browser.context.newPage();
  const problems = watchPage(page);
  try {
    await page.goto(server.url);
    await page.waitForSelector('body[data-ready="true"]');
    const got = {
      entries: await page.textContent('#entry-count'),
      path: await page.textContent('#path-length'),
      messages: await page.textContent('#context-messages'),
      tokens: await page.textContent('#context-tokens'),
    };
    assert.deepEqual(got, want);
    assert.ok((await page.locator('#path li').count()) > 10, 'the path is listed');
    mkdirSync(path.join(outDir, 'screenshots'), { recursive: true });
    await page.screenshot({ path: path.join(outDir, 'screenshots', 'demo-sample.png'), fullPage: true });
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});

test('the demo lists the malformed lines of an opened file as text', async () => {
  const page = await browser.context.newPage();
  const problems = watchPage(page);
  try {
    await page.goto(server.url);
    await page.waitForSelector('body[data-ready="true"]');
    const text = [
      '{"type":"session","version":3,"id":"h","cwd":"/"}',
      '{"type":"message","id":"1","parentId":null,"message":{"role":"user","content":"<img src=x onerror=alert(1)>"}}',
      '<script>window.pwned = true</script>',
    ].join('\n');
    await page.setInputFiles('#file', { name: 'hostile.jsonl', mimeType: 'text/plain', buffer: Buffer.from(text) });
    await page.waitForFunction(() => document.getElementById('entry-count')?.textContent === '1');
    const warnings = await page.locator('#warnings li').allTextContents();
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /^line 3: E_JSONL_LINE/);
    assert.equal(await page.evaluate(() => window.pwned ?? false), false);
    assert.equal(await page.locator('img').count(), 0);
    assert.deepEqual(problems, []);
  } finally {
    await page.close();
  }
});
