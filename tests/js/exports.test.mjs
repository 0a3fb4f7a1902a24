// Every entry's run-time exports against its declarations (the .d.ts the compiler generated):
// a test fails when a shipped export has no declaration or a declared export does not exist at
// run time. The run-time names come from importing the entry in a child Node.js under its
// export condition; the declared ones are compared by the TypeScript compiler itself (TS 7 has
// no JS API): a consumer holds the run-time names as an object type and computes the names on
// one side only, which it must assign `true` to: a type such as `"missing: Session"` instead
// makes the compiler print the names.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { outDir, testsDir } from './support/project.mjs';

const tsc = path.join(testsDir, 'node_modules', '.bin', 'tsc');
const registerWasmModule = fileURLToPath(new URL('./support/register-wasm-module.mjs', import.meta.url));

/** The entries: the specifier, the export condition, and the compiler options that resolve it. */
const ENTRIES = {
  node: { specifier: 'ctxfold', condition: 'node', compiler: { module: 'nodenext', moduleResolution: 'nodenext' } },
  web: {
    specifier: 'ctxfold',
    condition: 'browser',
    compiler: { module: 'esnext', moduleResolution: 'bundler', customConditions: ['browser'] },
  },
  workerd: {
    specifier: 'ctxfold',
    condition: 'workerd',
    compiler: { module: 'esnext', moduleResolution: 'bundler', customConditions: ['workerd'] },
  },
  'ai-sdk': {
    specifier: 'ctxfold/ai-sdk',
    condition: 'node',
    compiler: { module: 'nodenext', moduleResolution: 'nodenext' },
  },
};

/** The names an entry exports at run time, from a child Node.js under its condition. */
function runtimeNames({ specifier, condition }) {
  const child = spawnSync(
    process.execPath,
    [
      `--conditions=${condition}`,
      '--import',
      registerWasmModule,
      '--input-type=module',
      '-e',
      `console.log(JSON.stringify(Object.keys(await import(${JSON.stringify(specifier)}))))`,
    ],
    { cwd: testsDir, encoding: 'utf8', timeout: 60_000 },
  );
  assert.equal(child.status, 0, `importing ${specifier} (${condition}) failed:\n${child.stderr}`);
  return JSON.parse(child.stdout.trim().split('\n').at(-1)).sort();
}

/**
 * Compiles a consumer that holds `names` against the declarations of `entry`; returns the
 * names the declarations lack (`extra`) and the declared names `names` lacks (`missing`).
 */
function compare(name, entry, names) {
  const dir = path.join(outDir, 'exports', name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  const compilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: 'es2022',
    types: [],
    lib: ['es2022', 'dom'],
    noErrorTruncation: true,
    ...entry.compiler,
  };
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['main.mts'] }));
  const literal = names.map((n) => `  ${JSON.stringify(n)}: true,`).join('\n');
  writeFileSync(
    path.join(dir, 'main.mts'),
    `import type * as api from ${JSON.stringify(entry.specifier)};\n` +
      `declare const runtime: {\n${literal}\n};\n` +
      'type Missing = Exclude<keyof typeof api, keyof typeof runtime>;\n' +
      'type Extra = Exclude<keyof typeof runtime, keyof typeof api>;\n' +
      `export const missing: [Missing] extends [never] ? true : \`missing: \${Missing}\` = true;\n` +
      `export const extra: [Extra] extends [never] ? true : \`extra: \${Extra}\` = true;\n`,
  );
  const res = spawnSync(tsc, ['-p', dir], { encoding: 'utf8', timeout: 120_000 });
  const out = `${res.stdout}${res.stderr}`;
  const found = { extra: new Set(), missing: new Set() };
  for (const m of out.matchAll(/"(missing|extra): ([^"]+)"/g)) found[m[1]].add(m[2]);
  const other = out.split('\n').filter((l) => /error TS/.test(l) && !/"(missing|extra): /.test(l));
  assert.deepEqual(other, [], `the consumer of ${entry.specifier} did not compile:\n${out}`);
  assert.equal(res.status === 0, found.extra.size + found.missing.size === 0, out);
  return { extra: [...found.extra].sort(), missing: [...found.missing].sort() };
}

const KNOWN = {};

for (const [name, entry] of Object.entries(ENTRIES)) {
  const options = process.env.EXPORTS_STRICT === '1' || KNOWN[name] === undefined ? {} : { todo: KNOWN[name] };
  test(`exports: the ${name} entry's run-time exports are its declared exports`, options, () => {
    const names = runtimeNames(entry);
    assert.ok(names.includes('init'), `${name}: no init export`);
    assert.deepEqual(compare(name, entry, names), { extra: [], missing: [] });
  });
}

test('exports: the check reports a name missing at run time and one missing from the declarations', () => {
  const entry = ENTRIES.node;
  const names = runtimeNames(entry);
  const dropped = names.find((n) => n === 'Session');
  assert.ok(dropped !== undefined);
  const tampered = [...names.filter((n) => n !== dropped), 'notDeclaredAnywhere'];
  assert.deepEqual(compare('node-tampered', entry, tampered), { extra: ['notDeclaredAnywhere'], missing: ['Session'] });
});

test('exports: every way of making a session gives the exported Session', () => {
  const child = spawnSync(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { Session } from 'ctxfold';
       const s = Session.create({ cwd: '/w' });
       for (let i = 0; i < 4; i++) {
         s.appendMessage({ role: 'user', content: 'hello '.repeat(500) + i, timestamp: 1 });
         s.appendMessage({ role: 'assistant', content: [{ type: 'text', text: 'ok '.repeat(500) }], stopReason: 'stop', timestamp: 1 });
       }
       const plan = s.planCompaction({ keepRecentTokens: 100, strategy: 'handoff' });
       for (const q of plan.pending) plan.answer(q.id, 'the handoff document');
       const handoff = await s.compact({ strategy: 'handoff', summarize: async () => 'doc', settings: { keepRecentTokens: 100 } });
       const bytes = s.toBytes();
       const made = {
         create: s,
         fromJsonl: Session.fromJsonl(s.toJsonl()),
         fromReader: Session.fromReader(bytes.length, (view) => view.set(bytes)),
         fromAsyncReader: await Session.fromAsyncReader(bytes.length, async (view, at) => view.set(bytes.subarray(at, at + view.length))),
         fromStream: await Session.fromStream(new Response(bytes)),
         fromMessages: Session.fromMessages([{ role: 'user', content: 'x' }]),
         commitHandoff: s.commitHandoff(plan),
         compactHandoff: handoff.session,
       };
       console.log(JSON.stringify(Object.fromEntries(Object.entries(made).map(([k, v]) => [k, v instanceof Session]))));`,
    ],
    { cwd: testsDir, encoding: 'utf8', timeout: 60_000 },
  );
  assert.equal(child.status, 0, child.stderr);
  assert.deepEqual(JSON.parse(child.stdout.trim().split('\n').at(-1)), {
    create: true,
    fromJsonl: true,
    fromReader: true,
    fromAsyncReader: true,
    fromStream: true,
    fromMessages: true,
    commitHandoff: true,
    compactHandoff: true,
  });
});
