// The documentation's examples run against the built package and print what their `// →`
// comments say: the README's `<!-- readme-example: node -->` blocks and every
// `<!-- guide-example: NAME -->` block of docs/guide/. The package ships the README and the
// guides with every example, without the repo-only blocks, and with links that resolve inside it.

import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { transformSync } from 'esbuild';
import { pkgDir, repoDir, testsDir } from './support/project.mjs';

/** The guides the README links to; each has at least one runnable example. */
const guides = [
  'compaction',
  'maintainer',
  'pruning',
  'navigation',
  'snapcompact',
  'triggers',
  'formats',
  'storage',
  'loading',
];
/** The user documentation, as paths relative to the repository (and to the package). */
const userDocs = ['README.md', ...guides.map((g) => `docs/guide/${g}.md`)];
/** Documentation that stays in the repository. */
const repoDocs = ['CONTRIBUTING.md', 'docs/performance.md', 'docs/reliability.md', 'docs/decisions/size-budget.md'];
/** Examples run by their own test: here (a mock server), in workerd, or in Chromium. */
const runElsewhere = new Set(['browser', 'worker', 'compaction-openai']);

const read = (file) => readFileSync(path.join(repoDir, file), 'utf8');
const readme = read('README.md');

/** The `<!-- readme-example: … -->` / `<!-- guide-example: … -->` blocks of a Markdown text. */
function examplesOf(text) {
  return [...text.matchAll(/<!-- (readme|guide)-example: ([\w-]+) -->\n```(js|ts)\n([\s\S]*?)```/g)].map((m) => ({
    kind: m[1],
    name: m[2],
    block: m[0],
    lang: m[3],
    code: m[4],
  }));
}

/** Relative link targets of a Markdown text (no URLs, no in-page anchors). */
function relativeLinks(text) {
  return [...text.matchAll(/\]\(([^)\s]+)\)/g)]
    .map((m) => m[1].split('#')[0])
    .filter((target) => target !== '' && !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

const examples = userDocs.flatMap((file) =>
  existsSync(path.join(repoDir, file)) ? examplesOf(read(file)).map((e) => ({ file, ...e })) : [],
);

test('the README is for users: at most 12,000 bytes, with the examples other tests run', () => {
  const bytes = statSync(path.join(repoDir, 'README.md')).size;
  assert.ok(bytes <= 12_000, `README.md is ${bytes} B`);
  const names = examplesOf(readme).map((e) => e.name);
  for (const name of ['node', 'worker', 'browser']) assert.ok(names.includes(name), `README lacks the ${name} example`);
  assert.match(readme, /\nmake demo +#/);
  assert.match(readme, /\nmake test +#/);
});

test('every guide exists and has a runnable example; example names are unique', () => {
  for (const guide of guides) {
    const file = `docs/guide/${guide}.md`;
    assert.ok(existsSync(path.join(repoDir, file)), `${file} is missing`);
    const own = examplesOf(read(file));
    assert.ok(own.length >= 1, `${file} has no guide example`);
    assert.ok(
      own.every((e) => e.kind === 'guide'),
      `${file}: use <!-- guide-example: NAME -->`,
    );
    assert.ok(
      own.some((e) => !runElsewhere.has(e.name)),
      `${file} has no example run here`,
    );
  }
  const names = examples.map((e) => e.name);
  assert.deepEqual(names, [...new Set(names)], 'duplicate example names');
});

test('the README lists every error code of the types', () => {
  const types = readFileSync(path.join(repoDir, 'src/js/core/errors.ts'), 'utf8');
  const union = /export type ErrorCode =([^;]*);/.exec(types)?.[1] ?? '';
  const codes = [...union.matchAll(/'(E_[A-Z0-9_]+)'/g)].map((m) => m[1]);
  assert.ok(codes.length > 10, 'ErrorCode union found in index.d.ts');
  const errors = readme.slice(readme.indexOf('\n## Errors\n'));
  for (const code of [...codes, 'E_SHAPE', 'E_OPTIONS', 'E_FONT', 'E_ENCODE']) {
    assert.match(errors, new RegExp(`\\n- \`${code}\`: `), `README ## Errors lacks ${code}`);
  }
});

test('relative links of the repository documentation resolve', () => {
  for (const file of [...userDocs, ...repoDocs]) {
    for (const target of relativeLinks(read(file))) {
      const resolved = path.join(repoDir, path.dirname(file), target);
      assert.ok(existsSync(resolved), `${file} links to ${target}, which does not exist`);
    }
  }
});

test('the package ships the README and the guides with every example, no repo-only block, and working links', () => {
  // .ci/pkg.sh writes pkg/README.md and pkg/docs/guide/ without the `<!-- repo-only -->` blocks.
  for (const file of userDocs) {
    const shippedFile = path.join(pkgDir, file);
    assert.ok(existsSync(shippedFile), `pkg/${file} is missing`);
    const shipped = readFileSync(shippedFile, 'utf8');
    for (const { block } of examplesOf(read(file))) {
      assert.ok(shipped.includes(block), `pkg/${file} lacks ${block.split('\n')[0]}`);
    }
    assert.ok(!shipped.includes('repo-only'), `pkg/${file} has a repo-only block`);
    for (const target of relativeLinks(shipped)) {
      const resolved = path.resolve(path.dirname(shippedFile), target);
      assert.ok(
        resolved.startsWith(pkgDir) && existsSync(resolved),
        `pkg/${file} links to ${target}, which the package lacks`,
      );
    }
  }
  const shipped = readFileSync(path.join(pkgDir, 'README.md'), 'utf8');
  for (const heading of ['## Install', '## Import modes', '## Node.js', '## Guides', '## Errors']) {
    assert.ok(shipped.includes(`\n${heading}\n`), `pkg/README.md lacks ${heading}`);
  }
  assert.ok(shipped.includes('npm install ctxfold'));
  assert.ok(!shipped.includes('## From a checkout') && !shipped.includes('CONTRIBUTING'));
});

/**
 * Runs `code` as an ES module file in tests/ (so `ctxfold` is the built package). A `ts`
 * example runs with its types stripped (examples-ts.test.mjs type-checks it).
 */
function runModule(name, code, { args = [], env, lang = 'js' } = {}) {
  const file = path.join(testsDir, `.doc-example-${name}.mjs`);
  writeFileSync(
    file,
    lang === 'ts' ? transformSync(code, { loader: 'ts', format: 'esm', target: 'es2022' }).code : code,
  );
  return { file, args: [file, ...args], env: env ? { ...process.env, ...env } : process.env };
}

for (const { file, name, code, lang } of examples.filter((e) => !runElsewhere.has(e.name))) {
  test(`${file}: example ${name} prints what it says`, () => {
    const run = runModule(name, code, { lang });
    try {
      const res = spawnSync(process.execPath, run.args, { encoding: 'utf8', env: run.env });
      assert.equal(res.status, 0, res.stderr);
      const printed = res.stdout.trimEnd().split('\n');
      const expected = code
        .split('\n')
        .filter((line) => line.includes('console.log('))
        .map((line) => /\/\/ → (.*?)(?: \(.*\))?$/.exec(line)?.[1]);
      assert.equal(printed.length, expected.length, res.stdout);
      assert.ok(
        expected.some((want) => want !== undefined),
        `${name} states no output`,
      );
      expected.forEach((want, i) => {
        if (want !== undefined) assert.equal(printed[i], want, `console.log #${i + 1}`);
      });
    } finally {
      rmSync(run.file, { force: true });
    }
  });
}

test('docs/guide/compaction.md: the OpenAI-compatible example compacts a session file', async () => {
  const { default: http } = await import('node:http');
  const { mkdtempSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const example = examples.find((e) => e.name === 'compaction-openai');
  const code = example?.code;
  assert.ok(code, 'the example is in the compaction guide');
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
  const dir = mkdtempSync(path.join(tmpdir(), 'ctxfold-guide-'));
  const turns = [];
  let parent = null;
  for (let i = 0; i < 40; i++) {
    const id = `e${i}`;
    const message =
      i % 2 === 0
        ? { role: 'user', content: `request ${i} `.repeat(400) }
        : { role: 'assistant', content: [{ type: 'text', text: `answer ${i} `.repeat(400) }], stopReason: 'stop' };
    turns.push(
      JSON.stringify({ type: 'message', id, parentId: parent, timestamp: '2026-01-01T00:00:00.000Z', message }),
    );
    parent = id;
  }
  const sessionFile = path.join(dir, 'session.jsonl');
  writeFileSync(sessionFile, `{"type":"session","version":3,"id":"x","cwd":"/"}\n${turns.join('\n')}\n`);
  const run = runModule('compaction-openai', code, {
    lang: example.lang,
    args: [sessionFile],
    env: { OPENAI_BASE_URL: `http://127.0.0.1:${server.address().port}/v1`, OPENAI_API_KEY: 'test-key' },
  });
  try {
    // Not spawnSync: the mock server lives in this process and must keep answering.
    const child = spawn(process.execPath, run.args, { env: run.env });
    const res = { stdout: '', stderr: '' };
    child.stdout.on('data', (d) => (res.stdout += d));
    child.stderr.on('data', (d) => (res.stderr += d));
    res.status = await new Promise((r) => child.on('close', r));
    assert.equal(res.status, 0, res.stderr);
    assert.match(res.stdout, /^compacted: \d+ → \d+ tokens\n$/);
    assert.equal(seen[0].url, '/v1/chat/completions');
    assert.equal(seen[0].auth, 'Bearer test-key');
    assert.equal(seen[0].body.messages[0].role, 'system');
    const lines = readFileSync(sessionFile, 'utf8').trim().split('\n');
    const last = JSON.parse(lines.at(-1));
    assert.equal(last.type, 'compaction');
    assert.match(last.summary, /^summary 1/);
    assert.equal(typeof last.shortSummary, 'string');
    assert.equal(lines.length, 42, 'header, 40 entries, the compaction');
  } finally {
    rmSync(run.file, { force: true });
    rmSync(dir, { recursive: true, force: true });
    server.close();
  }
});

test('the docs folder holds only pages the documentation links to', () => {
  // A page nobody links to is lost to readers: README links the guides, CONTRIBUTING the rest.
  const linked = new Set();
  for (const file of [...userDocs, ...repoDocs]) {
    for (const target of relativeLinks(read(file))) linked.add(path.normalize(path.join(path.dirname(file), target)));
  }
  const pages = readdirSync(path.join(repoDir, 'docs'), { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('.md'))
    .map((f) => path.join('docs', f));
  for (const page of pages) assert.ok(linked.has(page), `${page} is linked from nowhere`);
});
