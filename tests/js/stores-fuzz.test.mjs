// A short run of the session stores' fuzz target (tests/fuzz/stores.mjs: hostile and valid
// `SessionChanges` saved into createDurableObjectStore over an in-memory SQLite stand-in), from a
// fixed seed: the ten-minute runs are reported with the work.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { test } from 'node:test';
import { testsDir } from './support/project.mjs';

test('stores fuzz target: 10 s from seed 1 find nothing', { timeout: 120_000 }, () => {
  const res = spawnSync(
    process.execPath,
    [path.join(testsDir, 'fuzz', 'stores.mjs'), '--seconds', '10', '--seed', '1'],
    {
      cwd: testsDir,
      encoding: 'utf8',
    },
  );
  assert.equal(res.status, 0, `${res.stdout}${res.stderr}`);
  const [, runs, accepted, refused, parts] = /(\d+) runs, (\d+) accepted, (\d+) refused, (\d+) with multi-row/.exec(
    res.stdout,
  );
  assert.match(res.stdout, /no finding/);
  // Both sides of the surface were reached, and lines long enough to take several rows.
  assert.ok(Number(runs) > 500 && Number(accepted) > 100 && Number(refused) > 100 && Number(parts) > 0, res.stdout);
});
