// What the package's errors carry besides `code` and `message`: a summarizer failure keeps the
// value the summarizer threw as `cause` and its HTTP `status`; the remote endpoint's failures
// keep the HTTP status and the fetch error; argument errors have neither. And the shipped
// JavaScript is the source as written, so a stack trace points at readable source lines.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { SourceMap } from 'node:module';
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

test('the shipped JavaScript maps to its source: every module has a source map carrying it', () => {
  // pkg/ mirrors src/js/: each compiled module has a map whose one source is its file in src/js/,
  // text included (the package ships without src/).
  const src = path.join(repoDir, 'src/js');
  const generated = new Set(['core/glue.js', 'runner/prompts.ts']);
  const sources = readdirSync(src, { recursive: true })
    .map((f) => f.split(path.sep).join('/'))
    .filter((f) => /\.(ts|js)$/.test(f) && !f.endsWith('.d.ts') && !generated.has(f));
  assert.ok(sources.length >= 30, sources.join(' '));
  for (const f of sources) {
    const js = f.replace(/\.ts$/, '.js');
    const code = readFileSync(path.join(pkgDir, js), 'utf8');
    assert.match(code, new RegExp(`//# sourceMappingURL=${path.basename(js)}\\.map\\n?$`), `pkg/${js}`);
    const map = JSON.parse(readFileSync(path.join(pkgDir, `${js}.map`), 'utf8'));
    assert.equal(map.sources.length, 1, `pkg/${js}.map`);
    assert.equal(path.basename(map.sources[0]), path.basename(f), `pkg/${js}.map names its source`);
    assert.equal(map.sourcesContent?.[0], readFileSync(path.join(src, f), 'utf8'), `pkg/${js}.map carries ${f}`);
  }
  // A thrown argument error's frames name the package files, at lines that hold the calls.
  let stack;
  try {
    Session.fromJsonl(42);
  } catch (err) {
    stack = err.stack;
  }
  const frames = [...stack.matchAll(/\((file:\/\/[^)]+):(\d+):(\d+)\)/g)].map(([, file, n, column]) => ({
    file: fileURLToPath(file),
    n: Number(n),
    column: Number(column),
  }));
  const root = path.resolve(pkgDir) + path.sep;
  const ours = frames.filter((f) => f.file.startsWith(root));
  assert.deepEqual(
    ours.map((f) => path.basename(f.file)).slice(0, 4),
    ['errors.js', 'errors.js', 'args.js', 'session.js'],
    stack,
  );
  // Through the source map, the frames land on the source lines that hold the calls.
  const lineOf = (f) => {
    const map = new SourceMap(JSON.parse(readFileSync(`${f.file}.map`, 'utf8')));
    const entry = map.findEntry(f.n - 1, f.column - 1);
    return entry.originalSource === undefined ? '' : map.payload.sourcesContent[0].split('\n')[entry.originalLine];
  };
  assert.match(lineOf(ours[2]), /throw invalidArgument\(/);
  assert.match(lineOf(ours[3]), /textOrBytes\(input, 'input'\)/);
});
