// The documentation's examples type-check (issue 37): every `<!-- readme-example -->` and
// `<!-- guide-example -->` block of the README and docs/guide/, saved as a file of a project that
// resolves `ctxfold` to the built package, compiles under `tsc --strict` with
// `noUncheckedIndexedAccess` and `exactOptionalPropertyTypes`: a `ts` block as a `.ts` file, a
// `js` block as a `.js` file checked the same way (`checkJs`: JSDoc gives the types JavaScript
// cannot write, such as a Workers handler's `request`). readme.test.mjs runs them (a `ts` block
// with its types stripped), workerd and Chromium the ones that run there; this test only
// compiles them, all in one tsc run.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { outDir, repoDir, testsDir } from './support/project.mjs';

const tsc = path.join(testsDir, 'node_modules', '.bin', 'tsc');
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
const docs = ['README.md', ...guides.map((g) => `docs/guide/${g}.md`)];

/** Every example block of the user documentation: its file, name and code. */
const examples = docs
  .filter((file) => existsSync(path.join(repoDir, file)))
  .flatMap((file) =>
    [
      ...readFileSync(path.join(repoDir, file), 'utf8').matchAll(
        /<!-- (?:readme|guide)-example: ([\w-]+) -->\n```(js|ts)\n([\s\S]*?)```/g,
      ),
    ].map((m) => ({ file, name: m[1], lang: m[2], code: m[3] })),
  );

test('examples-ts: the documentation has examples to compile', () => {
  assert.ok(examples.length >= 20, `found ${examples.length} examples`);
  for (const name of ['node', 'worker', 'browser', 'compaction-openai']) {
    assert.ok(
      examples.some((e) => e.name === name),
      `no ${name} example`,
    );
  }
});

test('examples-ts: every README and guide example type-checks under tsc --strict', () => {
  // Under tests/out/, so that tests/node_modules/ctxfold (the built pkg/) resolves.
  const dir = path.join(outDir, 'examples-ts');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  const fileOf = (e) => `${e.name}.${e.lang}`;
  const files = examples.map(fileOf);
  const compilerOptions = {
    strict: true,
    noUncheckedIndexedAccess: true,
    exactOptionalPropertyTypes: true,
    noEmit: true,
    allowJs: true,
    checkJs: true,
    target: 'es2022',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    // Node.js examples, the browser one (DOM) and the worker (Request, Response: in the DOM lib).
    lib: ['es2022', 'dom', 'dom.iterable'],
    types: ['node'],
    typeRoots: [path.join(testsDir, 'node_modules', '@types')],
    // The declarations of Node.js and the DOM are not ours; ctxfold's are checked by types.test.
    skipLibCheck: true,
  };
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, files }, null, 2));
  for (const e of examples) writeFileSync(path.join(dir, fileOf(e)), e.code);
  const res = spawnSync(tsc, ['-p', dir, '--pretty', 'false'], { encoding: 'utf8', timeout: 300_000 });
  const byName = new Map(examples.map((e) => [e.name, e.file]));
  const errors = `${res.stdout}${res.stderr}`
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const m = /([\w-]+)\.[jt]s\((\d+),(\d+)\): (.*)$/.exec(line);
      return m ? `${byName.get(m[1])}: example ${m[1]}, line ${m[2]}: ${m[4]}` : line;
    });
  assert.deepEqual(errors, [], `tsc exit ${res.status}:\n${errors.join('\n')}`);
  assert.equal(res.status, 0);
});
