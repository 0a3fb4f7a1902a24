// What the package's errors carry besides `code` and `message`: a summarizer failure keeps the
// value the summarizer threw as `cause` and its HTTP `status`; the remote endpoint's failures
// keep the HTTP status and the fetch error; argument errors have neither. And the shipped
// JavaScript is the source as written, so a stack trace points at readable source lines.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ContextManager, renderFrames, Session } from 'ctxfold';
import { pkgDir, repoDir } from './support/project.mjs';
import { loadBranched as load, BRANCHED_TEXT as TEXT } from './support/sessions.mjs';

const settings = { keepRecentTokens: 10 };
const retry = { baseDelayMs: 1, maxRetries: 1 };

/** The rejection of `promise`, which must reject. */
async function rejection(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  assert.fail('expected a rejection');
}

let server;
let url;
let reply = () => ({ status: 200, body: { summary: 'remote summary' } });

before(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const { status, body } = reply();
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${server.address().port}/summarize`;
});

after(() => {
  server.closeAllConnections();
  server.close();
});

test('compact: the thrown Error is the cause, its HTTP status the status', async () => {
  const s = load();
  const thrown = Object.assign(new Error('upstream overloaded'), { status: 529 });
  const err = await rejection(s.compact({ settings, retry, summarize: async () => Promise.reject(thrown) }));
  assert.equal(err.code, 'E_SUMMARIZER');
  assert.match(err.message, /upstream overloaded/);
  assert.equal(err.cause, thrown, 'the very value the summarizer threw');
  assert.equal(err.status, 529);
  assert.equal(s.toJsonl(), TEXT);

  // `statusCode` (as some HTTP clients name it) is a status too; a thrown string is kept as is.
  const other = Object.assign(new Error('gone'), { statusCode: 410 });
  const err2 = await rejection(
    s.compact({
      settings,
      retry,
      summarize: () => {
        throw other;
      },
    }),
  );
  assert.equal(err2.cause, other);
  assert.equal(err2.status, 410);
  const err3 = await rejection(s.compact({ settings, retry, summarize: async () => Promise.reject('a string') }));
  assert.equal(err3.code, 'E_SUMMARIZER');
  assert.equal(err3.cause, 'a string');
  assert.equal('status' in err3, false, 'no status where there is none');
});

test('compact: the remote endpoint failure keeps its HTTP status; a refused connection its fetch error', async () => {
  const s = load();
  reply = () => ({ status: 500, body: { error: 'boom' } });
  const err = await rejection(s.compact({ settings, retry, remoteEndpoint: url }));
  assert.equal(err.code, 'E_SUMMARIZER');
  assert.equal(err.status, 500);
  assert.ok(err.cause instanceof Error);
  assert.equal(err.cause.status, 500);
  assert.match(err.cause.message, /Remote compaction failed \(500 Internal Server Error\)/);

  // Nothing listens on port 9 of 127.0.0.1 (discard): fetch itself fails.
  const refused = await rejection(
    s.compact({ settings, retry: { enabled: false }, remoteEndpoint: 'http://127.0.0.1:9/x' }),
  );
  assert.equal(refused.code, 'E_SUMMARIZER');
  assert.match(refused.message, /fetch failed/);
  assert.ok(refused.cause instanceof Error, 'our wrapper of the fetch error');
  assert.ok(refused.cause.cause instanceof Error, 'the fetch error itself');
  assert.equal(s.toJsonl(), TEXT);
});

test('navigateTree: the thrown Error is the cause of E_SUMMARIZER', async () => {
  const s = load();
  const thrown = Object.assign(new Error('bad request'), { status: 400 });
  const err = await rejection(s.navigateTree('a9', { retry, summarize: async () => Promise.reject(thrown) }));
  assert.equal(err.code, 'E_SUMMARIZER');
  assert.match(err.message, /^Branch summarization failed: bad request/);
  assert.equal(err.cause, thrown);
  assert.equal(err.status, 400);
  assert.equal(s.leafId, 'a5');
});

test('argument errors and engine errors carry a code, no cause and no status', async () => {
  const cases = [
    () => Session.fromJsonl(42),
    () => Session.fromJsonl(TEXT).branch('nope'),
    () => renderFrames('x', { frameSize: -1 }),
    () => new ContextManager([]),
  ];
  for (const f of cases) {
    assert.throws(f, (err) => {
      assert.ok(err instanceof Error);
      assert.match(err.code, /^E_[A-Z_]+$/);
      assert.equal('cause' in err, false, err.message);
      assert.equal('status' in err, false, err.message);
      return true;
    });
  }
  const aborted = await rejection(
    load().compact({ settings, signal: AbortSignal.abort(), summarize: async () => 'x' }),
  );
  assert.equal(aborted.code, 'E_ABORTED');
  assert.match(aborted.message, /^Compaction aborted: /);
});

test('the shipped JavaScript is the source as written: stack frames point at source lines', () => {
  // Every hand-written module ships byte for byte (entries/ flattened into the package root).
  const src = path.join(repoDir, 'src/wasm/js');
  const shipped = [
    ...readdirSync(src)
      .filter((f) => f.endsWith('.js'))
      .map((f) => [path.join(src, f), f]),
    ...readdirSync(path.join(src, 'entries'))
      .filter((f) => f.endsWith('.js'))
      .map((f) => [path.join(src, 'entries', f), f]),
  ];
  assert.ok(shipped.length >= 10, shipped.map(([, f]) => f).join(' '));
  for (const [from, name] of shipped) {
    assert.equal(
      readFileSync(path.join(pkgDir, name), 'utf8'),
      readFileSync(from, 'utf8'),
      `pkg/${name} differs from its source`,
    );
  }
  // A thrown argument error's frames name the package files, at lines that hold the calls.
  let stack;
  try {
    Session.fromJsonl(42);
  } catch (err) {
    stack = err.stack;
  }
  const frames = [...stack.matchAll(/\((file:\/\/[^)]+):(\d+):\d+\)/g)].map(([, file, n]) => ({
    file: fileURLToPath(file),
    n: Number(n),
  }));
  const ours = frames.filter((f) => path.dirname(f.file) === path.resolve(pkgDir));
  assert.deepEqual(
    ours.map((f) => path.basename(f.file)).slice(0, 4),
    ['errors.js', 'errors.js', 'args.js', 'index.js'],
    stack,
  );
  const lineOf = (f) => readFileSync(f.file, 'utf8').split('\n')[f.n - 1];
  assert.match(lineOf(ours[2]), /throw invalidArgument\(/);
  assert.match(lineOf(ours[3]), /textOrBytes\(input, 'input'\)/);
});
