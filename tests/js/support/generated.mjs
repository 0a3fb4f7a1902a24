// Sessions made by the test kit's generator (`gen-session`, crates/testkit/src/bin/), cached in
// tests/out/bench/ by name: the same arguments always give the same bytes, so a cached file is
// as good as a fresh one, whichever build made it.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import { outDir, repoDir } from './project.mjs';

const cacheDir = path.join(outDir, 'bench');

/**
 * The generated session `name` (`gen-session ARGS`) as a Buffer (a Uint8Array: no copy).
 * `release: true` builds the generator optimized (benchmarks); the tests use a debug build
 * (quick: the generator does not link ctxfold).
 */
export function generatedSession(name, args, { release = false } = {}) {
  const file = path.join(cacheDir, name);
  if (!existsSync(file)) {
    mkdirSync(cacheDir, { recursive: true });
    const partial = `${file}.partial`;
    const res = spawnSync(
      'cargo',
      [
        'run',
        '--quiet',
        ...(release ? ['--release'] : []),
        '-p',
        'ctxfold-testkit',
        '--bin',
        'gen-session',
        '--',
        ...args,
        '--out',
        partial,
      ],
      { cwd: repoDir, stdio: ['ignore', 'inherit', 'inherit'] },
    );
    if (res.status !== 0) throw new Error(`gen-session failed for ${name}`);
    renameSync(partial, file);
  }
  return readFileSync(file);
}
