// Shared set-up of the browser tests: Debian's Chromium driven by playwright-core, and the
// package served with the demo's static server on 127.0.0.1.
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before } from 'node:test';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { serve } from '../../www/serve.mjs';
import { pkgDir } from '../js/support/project.mjs';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Launches headless Chromium with a fresh profile; `close()` also removes the profile. */
export async function launchChromium() {
  const profile = mkdtempSync(path.join(tmpdir(), 'ctxfold-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Serves `mounts` ({ '/': dir, '/pkg/': dir }) on a free loopback port. */
export function serveMounts(mounts) {
  return serve({ mounts, host: '127.0.0.1', port: 0 });
}

/** Collects console errors/warnings and uncaught page errors of `page`. */
export function watchPage(page) {
  const problems = [];
  page.on('console', (msg) => {
    if (msg.type() === 'error' || msg.type() === 'warning') problems.push(`console.${msg.type()}: ${msg.text()}`);
  });
  page.on('pageerror', (err) => problems.push(`pageerror: ${err.message}`));
  page.on('response', (res) => {
    if (res.status() >= 400) problems.push(`HTTP ${res.status()}: ${res.url()}`);
  });
  page.on('requestfailed', (req) => problems.push(`requestfailed: ${req.url()} ${req.failure()?.errorText}`));
  return problems;
}

/** What most browser tests serve: the test page at `/` and the built package at `/pkg/`. */
export const PAGE_MOUNTS = { '/': fileURLToPath(new URL('./page/', import.meta.url)), '/pkg/': pkgDir };

/**
 * Serves `mounts` and launches Chromium before the tests of the calling file, and closes both
 * after them. `mounts` may be an async function, for set-up the server needs first. Returns
 * `{ browser, server }`, filled in once the `before` hook has run.
 */
export function useChromium(mounts) {
  const harness = { browser: undefined, server: undefined };
  before(async () => {
    harness.server = await serveMounts(typeof mounts === 'function' ? await mounts() : mounts);
    harness.browser = await launchChromium();
  });
  after(async () => {
    await harness.browser?.close();
    await harness.server?.close();
  });
  return harness;
}

/**
 * Opens a page of `browser` with its problems watched, runs `body(page, problems)` and closes the
 * page whatever happens; resolves to what `body` returned.
 */
export async function withPage(browser, body) {
  const page = await browser.context.newPage();
  const problems = watchPage(page);
  try {
    return await body(page, problems);
  } finally {
    await page.close();
  }
}

/**
 * Picks the Actions tab's OpenAI-compatible summarizer: the endpoint at `url` (its `/v1`), the
 * key `sk-test-secret` and the model `tiny-model`.
 */
export async function chooseChatEndpoint(page, url) {
  await page.click('#tab-actions');
  await page.check('input[name="strategy"][value="chat"]');
  await page.fill('#chat-url', `${url}/v1`);
  await page.fill('#chat-key', 'sk-test-secret');
  await page.fill('#chat-model', 'tiny-model');
}

/** A fake OpenAI-compatible and remote-protocol summarizer on 127.0.0.1 (CORS enabled). */
export async function fakeSummarizer() {
  const requests = [];
  const srv = createServer((req, res) => {
    const cors = {
      'access-control-allow-origin': '*',
      'access-control-allow-headers': 'content-type, authorization',
      'access-control-allow-methods': 'POST',
    };
    if (req.method === 'OPTIONS') {
      res.writeHead(204, cors);
      return res.end();
    }
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const json = JSON.parse(body);
      requests.push({ url: req.url, authorization: req.headers.authorization ?? null, body: json });
      if (req.url === '/fail') {
        res.writeHead(400, { ...cors, 'content-type': 'application/json' });
        return res.end(JSON.stringify({ error: { message: 'bad request <script>window.pwned=1</script>' } }));
      }
      res.writeHead(200, { ...cors, 'content-type': 'application/json' });
      if (req.url === '/v1/chat/completions') {
        res.end(
          JSON.stringify({
            choices: [
              {
                message: {
                  role: 'assistant',
                  content: `## Goal\nSummary from the fake endpoint (${requests.length}).`,
                },
              },
            ],
          }),
        );
      } else {
        res.end(JSON.stringify({ summary: `## Goal\nRemote summary (${requests.length}).` }));
      }
    });
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${srv.address().port}`,
    requests,
    close: () =>
      new Promise((r) => {
        srv.close(r);
        srv.closeAllConnections();
      }),
  };
}
