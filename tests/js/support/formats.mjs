// What the message-format tests (tests/js/formats-*.test.mjs) share: their fixtures, the seeded
// generator their property tests draw histories from and the mutations they make, the timing of a large round trip, and the strict tsc
// consumer their type tests compile.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Session } from 'ctxfold';
import { outDir, testsDir } from './project.mjs';

/** The fixtures of `format` (tests/fixtures/formats/<format>/*.json), each with its `file` name. */
export function formatFixtures(format) {
  const dir = path.join(testsDir, 'fixtures', 'formats', format);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((f) => ({ file: f, ...JSON.parse(readFileSync(path.join(dir, f), 'utf8')) }));
}

/** A value without the `ctxfold` members the reader keeps (what another format sees). */
export const bare = (v) => JSON.parse(JSON.stringify(v, (k, x) => (k === 'ctxfold' ? undefined : x)));

/**
 * A seeded xorshift32 generator (the same seed gives the same draws) and what the property tests
 * draw with it: `next()` a float in [0, 1), `int(n)` in [0, n), `chance(p)`, `pick(list)`,
 * `text(max)` (fewer than `max` characters: ASCII, JSON's special ones, accents, CJK, an emoji),
 * `alnum(n)` (n letters and digits) and `shuffled(o)` (`o`, one time in five with its members in
 * a random order). A helper draws only when it is called.
 */
export function random(seed) {
  let s = seed >>> 0 || 1;
  const next = () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 2 ** 32;
  };
  const int = (n) => Math.floor(next() * n);
  const chance = (p) => next() < p;
  const pick = (list) => list[int(list.length)];
  const chars = [...'abcXYZ019 _-.,;:!?"\'\\/\n\t{}[]éß漢😀'];
  const text = (max = 12) => Array.from({ length: int(max) }, () => pick(chars)).join('');
  const digits = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'];
  const alnum = (n) => Array.from({ length: n }, () => pick(digits)).join('');
  const shuffled = (o) => {
    if (!chance(0.2)) return o;
    const keys = Object.keys(o).sort(() => next() - 0.5);
    return Object.fromEntries(keys.map((k) => [k, o[k]]));
  };
  return { next, int, chance, pick, text, alnum, shuffled };
}

/**
 * A copy of `value` with one member somewhere (below the top, at most five levels deep)
 * removed, replaced by a value of another type, given a `?`, or replaced by one of `unknowns`
 * (the format's unknown types and roles), drawn with `int` and `pick` of `random`.
 */
export function mutateOne({ int, pick }, value, unknowns) {
  const bad = structuredClone(value);
  const nodes = [];
  const walk = (v, depth) => {
    if (v === null || typeof v !== 'object' || depth > 5) return;
    nodes.push(v);
    for (const k of Object.keys(v)) walk(v[k], depth + 1);
  };
  walk(bad, 0);
  const node = pick(nodes.slice(1).length > 0 ? nodes.slice(1) : nodes);
  const keys = Object.keys(node);
  if (keys.length === 0) return bad;
  const key = pick(keys);
  const r = int(4);
  if (r === 0) delete node[key];
  else if (r === 1) node[key] = pick([null, 5, {}, [], 'x', true, -0.5]);
  else if (r === 2 && typeof node[key] === 'string') node[key] = `${node[key]}?`;
  else node[key] = pick(unknowns);
  return bad;
}

/**
 * A copy of `value` changed one to three times at random places: a value swapped for one of
 * `values`, a member deleted, an element duplicated or removed, or a value swapped for another
 * from the copy; drawn with `int` and `pick` of `r`.
 */
export function mutateSeveral(r, value, values) {
  const root = structuredClone(value);
  const nodes = [];
  const walk = (v, parent, key) => {
    nodes.push({ v, parent, key });
    if (v !== null && typeof v === 'object')
      for (const [k, c] of Object.entries(v)) walk(c, v, Array.isArray(v) ? Number(k) : k);
  };
  walk(root, null, null);
  for (let i = 1 + r.int(3); i > 0; i--) {
    const { v, parent, key } = r.pick(nodes);
    if (parent === null) continue;
    const what = r.int(4);
    if (what === 0) parent[key] = r.pick(values);
    else if (what === 1 && !Array.isArray(parent)) delete parent[key];
    else if (what === 2 && Array.isArray(parent)) parent.splice(key, 0, structuredClone(v));
    else if (Array.isArray(parent)) parent.splice(key, 1);
    else parent[key] = structuredClone(r.pick(nodes).v);
  }
  return root;
}

/**
 * The best of `runs` timings (ms) of `Session.fromMessages(messages, format).toMessages(format)`;
 * each run must give back as many messages as it read.
 */
export function bestRoundTrip(messages, format, runs = 3) {
  let best = Number.POSITIVE_INFINITY;
  for (let run = 0; run < runs; run++) {
    const started = performance.now();
    const session = Session.fromMessages(messages, format);
    const out = session.toMessages(format);
    best = Math.min(best, performance.now() - started);
    assert.equal(out.messages.length, messages.length);
    session.free();
  }
  return best;
}

/** The compiler options of a strict TypeScript consumer of the package. */
export const STRICT = {
  strict: true,
  noEmit: true,
  target: 'es2022',
  types: [],
  module: 'nodenext',
  moduleResolution: 'nodenext',
  lib: ['es2022'],
  exactOptionalPropertyTypes: true,
  noUncheckedIndexedAccess: true,
};

/** Runs tsc on `source` as a consumer under tests/out/types/`name` (so that tests/node_modules resolves). */
export function typeCheck(name, compilerOptions, source) {
  const dir = path.join(outDir, 'types', name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['main.mts'] }));
  writeFileSync(path.join(dir, 'main.mts'), source);
  const tsc = path.join(testsDir, 'node_modules', '.bin', 'tsc');
  const res = spawnSync(tsc, ['-p', dir], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(res.status, 0, `tsc failed:\n${res.stdout}${res.stderr}`);
}

/**
 * The round-trip property of a format: each of `rounds` histories `gen.history()` draws comes
 * back from `fromMessages` → `toMessages` as the same JSON with no warnings, and in the pi view
 * every tool result follows its call.
 */
export function assertRoundTrips(gen, options, rounds = 300) {
  for (let round = 0; round < rounds; round++) {
    const history = gen.history();
    const session = Session.fromMessages(history, options);
    const out = session.toMessages(options);
    assert.equal(JSON.stringify(out.messages), JSON.stringify(history), `round ${round}`);
    assert.deepEqual(out.warnings, [], `round ${round}`);
    const calls = new Set();
    for (const m of session.toLlmMessages()) {
      if (m.role === 'assistant') for (const b of m.content) if (b.type === 'toolCall') calls.add(b.id);
      if (m.role === 'toolResult') assert.ok(calls.has(m.toolCallId), `round ${round}: ${m.toolCallId}`);
    }
    session.free();
  }
}

/**
 * The mutation property of a format: of `rounds` histories `gen.mutate(gen.history())` makes,
 * a refused one throws E_INVALID_MESSAGE with an index inside the array and a field, and an
 * accepted one is written in its format and in `alsoWrite` without a throw; more than a
 * quarter are refused.
 */
export function assertMutationsRefusedCleanly(gen, options, { rounds = 400, alsoWrite = [] } = {}) {
  let refused = 0;
  for (let round = 0; round < rounds; round++) {
    const bad = gen.mutate(gen.history());
    let session;
    try {
      session = Session.fromMessages(bad, options);
    } catch (err) {
      assert.equal(err.code, 'E_INVALID_MESSAGE', `round ${round}: ${err.stack}`);
      assert.ok(Number.isInteger(err.index) && err.index >= 0 && err.index < bad.length, err.message);
      assert.equal(typeof err.field, 'string');
      refused++;
      continue;
    }
    session.toMessages(options);
    for (const format of alsoWrite) session.toMessages({ format });
    session.free();
  }
  assert.ok(refused > rounds / 4, `${refused} of ${rounds} refused`);
}
