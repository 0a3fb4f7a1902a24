// The README's examples run against the built package, and print what their `// →` comments say.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { repoDir, testsDir, pkgDir } from './support/project.mjs';

const readme = readFileSync(path.join(repoDir, 'README.md'), 'utf8');
const examples = [...readme.matchAll(/<!-- readme-example: node -->\n```js\n([\s\S]*?)```/g)].map((m) => m[1]);

test('the README has a runnable Node example', () => {
  assert.ok(examples.length >= 1);
});

test('the package README keeps every example and the user sections, and no repo-only block', () => {
  // .ci/pkg.sh writes pkg/README.md from README.md without the `<!-- repo-only -->` blocks.
  const shipped = readFileSync(path.join(pkgDir, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/<!-- readme-example: [\w-]+ -->\n```js\n[\s\S]*?```/g)].map((m) => m[0]);
  assert.ok(blocks.length >= 4, 'node, node-openai, browser and worker examples');
  for (const block of blocks) assert.ok(shipped.includes(block), `pkg/README.md lacks ${block.split('\n')[0]}`);
  for (const heading of ['## The package', '## Using it', '## Compaction', '## Pruning', '## snapcompact', '### Fonts and their licences', '## Performance']) {
    assert.ok(shipped.includes(`\n${heading}\n`), `pkg/README.md lacks ${heading}`);
  }
  assert.ok(shipped.includes('npm install ctxfold'));
  assert.ok(!shipped.includes('repo-only'));
  assert.ok(!shipped.includes('## Development') && !shipped.includes('## Reliability'));
});

examples.forEach((code, n) => {
  test(`README example ${n + 1} prints what it says`, () => {
    // Run from tests/ so that `ctxfold` resolves to the built package.
    const file = path.join(testsDir, `.readme-example-${n + 1}.mjs`);
    writeFileSync(file, code);
    try {
      const res = spawnSync(process.execPath, [file], { encoding: 'utf8' });
      assert.equal(res.status, 0, res.stderr);
      const printed = res.stdout.trimEnd().split('\n');
      const expected = code
        .split('\n')
        .filter((line) => line.includes('console.log('))
        .map((line) => /\/\/ → (.*?)(?: \(.*\))?$/.exec(line)?.[1]);
      assert.equal(printed.length, expected.length, res.stdout);
      expected.forEach((want, i) => {
        if (want !== undefined) assert.equal(printed[i], want, `console.log #${i + 1}`);
      });
    } finally {
      rmSync(file, { force: true });
    }
  });
});

test('README: the OpenAI-compatible compaction example compacts a session file', async () => {
  const { default: http } = await import('node:http');
  const { mkdtempSync, readFileSync: read, writeFileSync: write } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const code = /<!-- readme-example: node-openai -->\n```js\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(code, 'the example is in the README');
  const seen = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ url: req.url, auth: req.headers.authorization, body: JSON.parse(body) });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ choices: [{ message: { content: `summary ${seen.length}` } }] }));
    });
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const dir = mkdtempSync(path.join(tmpdir(), 'ctxfold-readme-'));
  const turns = [];
  let parent = null;
  for (let i = 0; i < 40; i++) {
    const id = `e${i}`;
    const message = i % 2 === 0
      ? { role: 'user', content: `request ${i} `.repeat(400) }
      : { role: 'assistant', content: [{ type: 'text', text: `answer ${i} `.repeat(400) }], stopReason: 'stop' };
    turns.push(JSON.stringify({ type: 'message', id, parentId: parent, timestamp: '2026-01-01T00:00:00.000Z', message }));
    parent = id;
  }
  const sessionFile = path.join(dir, 'session.jsonl');
  write(sessionFile, `{"type":"session","version":3,"id":"x","cwd":"/"}\n${turns.join('\n')}\n`);
  const file = path.join(testsDir, '.readme-example-openai.mjs');
  writeFileSync(file, code);
  try {
    // Not spawnSync: the mock server lives in this process and must keep answering.
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, [file, sessionFile], {
      env: { ...process.env, OPENAI_BASE_URL: `http://127.0.0.1:${server.address().port}/v1`, OPENAI_API_KEY: 'test-key' },
    });
    const res = { stdout: '', stderr: '' };
    child.stdout.on('data', (d) => (res.stdout += d));
    child.stderr.on('data', (d) => (res.stderr += d));
    res.status = await new Promise((r) => child.on('close', r));
    assert.equal(res.status, 0, res.stderr);
    assert.match(res.stdout, /^compacted: \d+ → \d+ tokens\n$/);
    assert.equal(seen[0].url, '/v1/chat/completions');
    assert.equal(seen[0].auth, 'Bearer test-key');
    assert.equal(seen[0].body.messages[0].role, 'system');
    const lines = read(sessionFile, 'utf8').trim().split('\n');
    const last = JSON.parse(lines.at(-1));
    assert.equal(last.type, 'compaction');
    assert.match(last.summary, /^summary 1/);
    assert.equal(typeof last.shortSummary, 'string');
    assert.equal(lines.length, 42, 'header, 40 entries, the compaction');
  } finally {
    rmSync(file, { force: true });
    server.close();
  }
});
