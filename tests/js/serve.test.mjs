// The demo's static server (www/serve.mjs, issue 43 item 2): it answers only requests
// addressed to it by a loopback name and its port (no DNS rebinding), forbids framing and
// sniffing, sends no referrer, and sends each page's Content-Security-Policy as a header with
// `frame-ancestors 'none'`.

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { serve } from '../../www/serve.mjs';

const WWW = fileURLToPath(new URL('../../www/', import.meta.url));

/** GET `path` from 127.0.0.1:`port` with the given Host header: `{status, headers, body}`. */
function get(port, path, host) {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: host === undefined ? {} : { host } }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString() }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

let server;
before(async () => {
  server = await serve({ root: WWW, host: '127.0.0.1', port: 0 });
});
after(() => server?.close());

test('the page comes with its meta policy as a header, plus no framing', async () => {
  const res = await get(server.port, '/', `127.0.0.1:${server.port}`);
  assert.equal(res.status, 200);
  const meta = /http-equiv="Content-Security-Policy" content="([^"]*)"/.exec(
    readFileSync(`${WWW}index.html`, 'utf8'),
  )[1];
  assert.equal(res.headers['content-security-policy'], `${meta}; frame-ancestors 'none'`);
  assert.match(res.headers['content-security-policy'], /default-src 'none'; script-src 'self' 'wasm-unsafe-eval'/);
  assert.equal(res.headers['x-frame-options'], 'DENY');
  assert.equal(res.headers['x-content-type-options'], 'nosniff');
  assert.equal(res.headers['referrer-policy'], 'no-referrer');
  assert.equal(Number(res.headers['content-length']), Buffer.byteLength(res.body));
  assert.match(res.body, /session tree explorer/);
});

test('scripts and errors carry the framing and sniffing headers too', async () => {
  for (const [path, status] of [
    ['/app.js', 200],
    ['/missing.js', 404],
    ['/examples', 301],
  ]) {
    const res = await get(server.port, path, `localhost:${server.port}`);
    assert.equal(res.status, status, path);
    assert.equal(res.headers['x-frame-options'], 'DENY', path);
    assert.equal(res.headers['x-content-type-options'], 'nosniff', path);
    assert.equal(res.headers['referrer-policy'], 'no-referrer', path);
  }
});

test('loopback names with the port are answered; any other Host is refused with 421', async () => {
  const port = server.port;
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`, `[::1]:${port}`]) {
    assert.equal((await get(port, '/', host)).status, 200, host);
  }
  for (const host of [
    `evil.example:${port}`,
    'evil.example',
    `127.0.0.1.evil.example:${port}`,
    `localhost:${port + 1}`,
    '127.0.0.1',
    'localhost',
  ]) {
    const res = await get(port, '/', host);
    assert.equal(res.status, 421, JSON.stringify(host));
    assert.doesNotMatch(res.body, /session tree explorer/);
    assert.equal(res.headers['x-frame-options'], 'DENY');
  }
  // No Host header at all (HTTP/1.0).
  const raw = await new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.end('GET / HTTP/1.0\r\n\r\n'));
    let text = '';
    socket.on('data', (c) => {
      text += c;
    });
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
  assert.match(raw, /^HTTP\/1\.\d 421 /);
});
