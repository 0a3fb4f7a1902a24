// A short run of the message formats' fuzz target (tests/fuzz/formats.mjs) on every format's
// fixtures, from a fixed seed: the ten-minute runs are in docs/reliability.md.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { testsDir } from './support/project.mjs';

test('formats fuzz target: 15 s from seed 1 find nothing', { timeout: 120_000 }, () => {
  const res = spawnSync(
    process.execPath,
    [path.join(testsDir, 'fuzz', 'formats.mjs'), '--seconds', '15', '--seed', '1'],
    {
      cwd: testsDir,
      encoding: 'utf8',
    },
  );
  assert.equal(res.status, 0, `${res.stdout}${res.stderr}`);
  assert.match(res.stdout, /no finding/);
  // Every format with fixtures took part, and some mutated inputs were accepted.
  for (const line of res.stdout.split('\n').filter((l) => /^ {2}\S+: \d+ runs/.test(l))) {
    const [, runs, accepted] = /: (\d+) runs, (\d+) accepted/.exec(line);
    assert.ok(Number(runs) > 100, line);
    assert.ok(Number(accepted) > 0, line);
  }
});
