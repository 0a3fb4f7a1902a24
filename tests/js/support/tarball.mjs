// The package as a user gets it: `npm pack` of pkg/ and `npm install ./ctxfold-x.y.z.tgz` in a
// fresh project of its own (never the source folder or the tests/node_modules link).

import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pkgDir } from './project.mjs';

const npmQuiet = ['--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'];

/** A temp folder; `remove()` deletes it (kept when KEEP_TMP=1, for a look after a failure). */
export function tempDir(prefix) {
  const dir = mkdtempSync(path.join(tmpdir(), `ctxfold-${prefix}-`));
  return { dir, remove: () => process.env.KEEP_TMP === '1' || rmSync(dir, { recursive: true, force: true }) };
}

/** `npm pack` of pkg/ into `dest`; returns the tarball's path. */
export function packTarball(dest) {
  const out = execFileSync('npm', ['pack', '--json', '--pack-destination', dest, ...npmQuiet], {
    cwd: pkgDir,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return path.join(dest, JSON.parse(out)[0].filename);
}

/**
 * A new project in `dir` (its package.json is `{ name, private, ...manifest }`) that installs the
 * tarball the way a user would: copied in, `npm install ./ctxfold-x.y.z.tgz`. The tarball has no
 * dependencies, so nothing is fetched from the registry (`--offline` makes sure of it).
 */
export function installTarball(dir, tarball, manifest = {}) {
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    path.join(dir, 'package.json'),
    JSON.stringify({ name: path.basename(dir), private: true, ...manifest }, null, 2),
  );
  const local = `./${path.basename(tarball)}`;
  copyFileSync(tarball, path.join(dir, local));
  execFileSync('npm', ['install', local, '--offline', ...npmQuiet], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 60_000,
  });
  return path.join(dir, 'node_modules', 'ctxfold');
}
