// Compaction in headless Chromium: compact() through a summarize callback and through a remote
// endpoint (a CORS-enabled local server), an abort, and the unchanged session after failure.

import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, test } from 'node:test';
import { PAGE_MOUNTS, useChromium, withPage } from './support.mjs';

const harness = useChromium(PAGE_MOUNTS);
let endpoint;
let endpointUrl;

/** The remote summarizer endpoint: CORS-enabled, it answers with the maxTokens it was sent. */
before(async () => {
  endpoint = http.createServer((req, res) => {
    res.setHeader('access-control-allow-origin', '*');
    res.setHeader('access-control-allow-headers', 'content-type, authorization');
    if (req.method === 'OPTIONS') {
      res.writeHead(204);
      res.end();
      return;
    }
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const { maxTokens } = JSON.parse(body);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ summary: `remote summary (${maxTokens})` }));
    });
  });
  await new Promise((r) => endpoint.listen(0, '127.0.0.1', r));
  endpointUrl = `http://127.0.0.1:${endpoint.address().port}/summarize`;
});

after(() => {
  endpoint?.close();
});

test('Chromium: compact() with a callback, a remote endpoint, and an abort', async () => {
  await withPage(harness.browser, async (page, problems) => {
    await page.goto(harness.server.url);
    const result = await page.evaluate(async (url) => {
      const ctxfold = await import('/pkg/entries/web.js');
      await ctxfold.init();
      const lines = ['{"type":"session","version":3,"id":"b","cwd":"/"}'];
      let parent = null;
      for (let i = 0; i < 8; i++) {
        const role = i % 2 === 0 ? 'user' : 'assistant';
        const message =
          role === 'user'
            ? { role, content: `question ${i} `.repeat(40) }
            : { role, content: [{ type: 'text', text: `answer ${i} `.repeat(i === 7 ? 1 : 40) }], stopReason: 'stop' };
        lines.push(
          JSON.stringify({
            type: 'message',
            id: `m${i}`,
            parentId: parent,
            timestamp: '2026-01-01T00:00:00.000Z',
            message,
          }),
        );
        parent = `m${i}`;
      }
      const text = `${lines.join('\n')}\n`;
      const settings = { keepRecentTokens: 30 };

      const a = ctxfold.Session.fromJsonl(text);
      const viaCallback = await a.compact({ settings, summarize: async (req) => `local ${req.purpose}` });

      const b = ctxfold.Session.fromJsonl(text);
      const viaEndpoint = await b.compact({ settings, remoteEndpoint: url });

      const c = ctxfold.Session.fromJsonl(text);
      const controller = new AbortController();
      const hanging = c.compact({ settings, signal: controller.signal, summarize: () => new Promise(() => {}) });
      setTimeout(() => controller.abort(), 20);
      let code = 'no error';
      try {
        await hanging;
      } catch (err) {
        code = err.code;
      }
      return {
        callback: viaCallback.compactionEntry.summary,
        endpoint: viaEndpoint.compactionEntry.summary,
        method: viaEndpoint.compactionEntry.method,
        roles: a.buildContext().messages.map((m) => m.role),
        abortCode: code,
        unchanged: c.toJsonl() === text,
      };
    }, endpointUrl);
    assert.match(result.callback, /^local history/);
    assert.match(result.endpoint, /^remote summary \(13107\)/);
    assert.equal(result.method, 'remote');
    assert.equal(result.roles[0], 'compactionSummary');
    assert.equal(result.abortCode, 'E_ABORTED');
    assert.equal(result.unchanged, true);
    assert.deepEqual(problems, []);
  });
});
