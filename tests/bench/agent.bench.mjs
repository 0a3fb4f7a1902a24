// The scripted agent's run time (issue 19: the whole file in under 60 s): runs
// tests/js/agent.test.mjs once in its own Node.js test process and reports the file's wall time
// and each case's Maintainer cost per request, read from the diagnostics the test prints.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { timesRow } from './lib.mjs';

const testsDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// "# snapcompact, 200k window, anthropic: 25310 ms, 1000 requests, … maintainer 24.10 ms/request"
const CASE_LINE = /^# (\S.*?): (\d+) ms, (\d+) requests, .*?maintainer ([\d.]+) ms\/request/;

export default async function () {
  const t0 = performance.now();
  const res = spawnSync(process.execPath, ['--test', '--test-reporter=tap', 'js/agent.test.mjs'], {
    cwd: testsDir,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
  const seconds = (performance.now() - t0) / 1_000;
  if (res.status !== 0) throw new Error(`the scripted agent failed (exit ${res.status}):\n${res.stdout}${res.stderr}`);
  const rows = [
    timesRow('scripted agent, whole file (node --test)', [seconds], { unit: 's', note: 'target < 60 s (issue 19)' }),
  ];
  // Each case's line, once (the reporter repeats diagnostics at the file level, indented).
  const seen = new Set();
  for (const line of res.stdout.split('\n')) {
    const m = CASE_LINE.exec(line);
    if (!m || seen.has(m[1])) continue;
    seen.add(m[1]);
    rows.push(
      timesRow(`scripted agent, ${m[1]}`, [Number(m[4])], {
        note: `Maintainer per request, ${m[3]} requests; case ${(Number(m[2]) / 1_000).toFixed(1)} s`,
      }),
    );
  }
  if (rows.length === 1) throw new Error(`no case line in the scripted agent's output:\n${res.stdout}`);
  return rows;
}
