// The import direction of the package's sources (src/js/), checked by `make lint`:
//   entries/ → ai-sdk/ → runner/ → providers/ → formats/ → storage/ → core/
// A folder imports only itself and the folders to its right, and no file imports itself back
// through any chain (no cycle). Reads `import … from '…'`, `export … from '…'` and `import('…')`
// with relative specifiers; prints every violation and exits 1 when there is one.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const root = path.resolve(process.argv[2] ?? 'src/js');
const ORDER = ['entries', 'ai-sdk', 'runner', 'providers', 'formats', 'storage', 'core'];
const rank = (file) => ORDER.indexOf(file.split('/')[0]);

const files = readdirSync(root, { recursive: true })
  .map((f) => f.split(path.sep).join('/'))
  .filter((f) => /\.(ts|js|mts)$/.test(f) && !f.endsWith('.d.ts') && f !== 'core/glue.js');
const known = new Set(files);
const resolve = (from, spec) => {
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(from), spec));
  for (const c of [target, target.replace(/\.js$/, '.ts')]) if (known.has(c)) return c;
  return null;
};
const SPEC = /(?:^|\n)\s*(?:import|export)\b[^'"]*?\bfrom\s*['"](\.{1,2}\/[^'"]+)['"]|\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)|(?:^|\n)\s*import\s*['"](\.{1,2}\/[^'"]+)['"]/g;

const problems = [];
const edges = new Map();
for (const f of files) {
  if (rank(f) < 0) problems.push(`${f}: not in one of the folders ${ORDER.join(', ')}`);
  const text = readFileSync(path.join(root, f), 'utf8');
  const out = [];
  for (const m of text.matchAll(SPEC)) {
    const spec = m[1] ?? m[2] ?? m[3];
    if (/\.wasm(\?|$)/.test(spec)) continue;
    const to = resolve(f, spec);
    if (to === null) {
      if (!/\/(glue|prompts)\.js$/.test(spec)) problems.push(`${f}: '${spec}' resolves to no source file`);
      continue;
    }
    out.push(to);
    if (rank(to) < rank(f)) problems.push(`${f} imports ${to}: ${to.split('/')[0]}/ sits above ${f.split('/')[0]}/`);
  }
  edges.set(f, out);
}

// Cycles: a depth-first search that reports each back edge's loop once.
const state = new Map();
const stack = [];
const seen = new Set();
const visit = (f) => {
  state.set(f, 1);
  stack.push(f);
  for (const to of edges.get(f) ?? []) {
    if (state.get(to) === 1) {
      const loop = [...stack.slice(stack.indexOf(to)), to].join(' → ');
      if (!seen.has(loop)) seen.add(loop), problems.push(`import cycle: ${loop}`);
    } else if (!state.has(to)) visit(to);
  }
  stack.pop();
  state.set(f, 2);
};
for (const f of files) if (!state.has(f)) visit(f);

if (problems.length > 0) {
  console.error(`[ts-layers] ${problems.length} problem(s) in ${path.relative(process.cwd(), root) || '.'}:`);
  for (const p of problems) console.error(`  ${p}`);
  process.exit(1);
}
console.log(`[ts-layers] ${files.length} files, imports point one way, no cycle`);
