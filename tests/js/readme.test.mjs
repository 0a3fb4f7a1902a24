// The README's examples run against the built package, and print what their `// →` comments say.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { repoDir, testsDir } from './support/project.mjs';

const readme = readFileSync(path.join(repoDir, 'README.md'), 'utf8');
const examples = [...readme.matchAll(/<!-- readme-example: node -->\n```js\n([\s\S]*?)```/g)].map((m) => m[1]);

test('the README has a runnable Node example', () => {
  assert.ok(examples.length >= 1);
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
