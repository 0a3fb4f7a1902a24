// Paths and facts of the repository that the JS tests compare the built package with.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const repoDir = fileURLToPath(new URL('../../../', import.meta.url));
export const testsDir = fileURLToPath(new URL('../../', import.meta.url));
export const pkgDir = fileURLToPath(new URL('../../../pkg/', import.meta.url));
export const outDir = fileURLToPath(new URL('../../out/', import.meta.url));

/** The `version` of Cargo.toml's [package] section. */
export function cargoVersion() {
  const toml = readFileSync(new URL('Cargo.toml', `file://${repoDir}`), 'utf8');
  const section = toml.split(/^\[/m).find((s) => s.startsWith('package]'));
  const match = section && /^version\s*=\s*"([^"]+)"/m.exec(section);
  if (!match) throw new Error('no [package] version in Cargo.toml');
  return match[1];
}
