// Fuzzes the message format readers and writers (src/js/formats/) through the public API.
//
//   node tests/fuzz/formats.mjs [--seconds N] [--seed S] [--format NAME]
//
// The readers are JavaScript, so cargo-fuzz cannot reach them; this is their fuzz target. It
// starts from the message arrays of the fixtures (tests/fixtures/formats/<format>/*.json: every
// array of objects in a file), mutates them (values replaced by other types, huge and empty
// strings, deleted and duplicated members and elements, the `type` / `role` names of every
// fixture swapped in, `__proto__` members), and checks for each input:
//   - `Session.fromMessages` either succeeds or throws E_INVALID_MESSAGE with an integer
//     `index` inside the array and a string `field`; nothing else (a TypeError, a wasm trap);
//   - after a success, the first provider view (which takes the messages `fromMessages` wrote
//     as objects, not from wasm) equals that of the session file reloaded; `toMessages` in
//     every format works, and the session file reloads with the same entries;
//   - a refused `appendMessages` leaves the session's bytes as they were.
// What the readers accept reaches the core as AgentMessage JSON, which the cargo-fuzz targets
// of the session loader and the context builder fuzz in turn. A failing input is written to
// tests/out/fuzz-formats/ and the process exits 1.
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { Session } from 'ctxfold';

const here = path.dirname(fileURLToPath(import.meta.url));
const fixtures = path.join(here, '..', 'fixtures', 'formats');
const outDir = path.join(here, '..', 'out', 'fuzz-formats');

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const seconds = Number(opt('seconds', 60));
let seed = Number(opt('seed', Date.now() % 2 ** 31)) >>> 0;
const only = opt('format', undefined);

/** xorshift32: reproducible from `--seed`. */
function rand() {
  seed ^= seed << 13;
  seed >>>= 0;
  seed ^= seed >>> 17;
  seed ^= seed << 5;
  seed >>>= 0;
  return seed / 2 ** 32;
}
const pick = (list) => list[Math.floor(rand() * list.length)];

/** Every array of objects in a JSON value (the message arrays of a fixture), and its names. */
function harvest(value, arrays, names) {
  if (Array.isArray(value)) {
    if (value.length > 0 && value.every((v) => v !== null && typeof v === 'object' && !Array.isArray(v)))
      arrays.push(value);
    for (const v of value) harvest(v, arrays, names);
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if ((k === 'type' || k === 'role') && typeof v === 'string') names.add(v);
      harvest(v, arrays, names);
    }
  }
}

const formats = readdirSync(fixtures, { withFileTypes: true })
  .filter((d) => d.isDirectory() && (only === undefined || d.name === only))
  .map((d) => {
    const arrays = [];
    const names = new Set();
    for (const f of readdirSync(path.join(fixtures, d.name)).filter((f) => f.endsWith('.json'))) {
      harvest(JSON.parse(readFileSync(path.join(fixtures, d.name, f), 'utf8')), arrays, names);
    }
    return { name: d.name, arrays, names: [...names] };
  })
  .filter((f) => f.arrays.length > 0);
if (formats.length === 0) {
  console.error(`no fixtures under ${fixtures}${only ? ` for ${only}` : ''}`);
  process.exit(2);
}
const allFormats = ['pi', ...new Set(formats.map((f) => f.name))];

const HUGE = 'x'.repeat(1 << 20);
function randomValue(names) {
  switch (Math.floor(rand() * 12)) {
    case 0:
      return null;
    case 1:
      return Math.floor(rand() * 2 ** 32) - 2 ** 31;
    case 2:
      return pick([Number.NaN, Number.POSITIVE_INFINITY, -0, 1e308, 0.5]);
    case 3:
      return '';
    case 4:
      return pick(names);
    case 5:
      return HUGE;
    case 6:
      return [];
    case 7:
      return {};
    case 8:
      return rand() < 0.5;
    case 9:
      return 'data:image/png;base64,AAAA';
    case 10:
      return '{"a":1';
    default:
      return '\u{1F600}\uD800 mixed';
  }
}

/** Every object and array inside `root`, with its parent and key. */
function nodes(root) {
  const out = [];
  const walk = (v, parent, key) => {
    out.push({ v, parent, key });
    if (v !== null && typeof v === 'object')
      for (const [k, c] of Object.entries(v)) walk(c, v, Array.isArray(v) ? Number(k) : k);
  };
  walk(root, null, null);
  return out;
}

function mutate(messages, names) {
  const root = structuredClone(messages);
  const n = 1 + Math.floor(rand() * 4);
  for (let i = 0; i < n; i++) {
    const all = nodes(root);
    const { v, parent, key } = pick(all);
    const r = rand();
    if (parent === null) {
      if (root.length > 1 && r < 0.5) root.splice(Math.floor(rand() * root.length), 1);
      else root.push(structuredClone(pick(root)));
    } else if (r < 0.35) parent[key] = randomValue(names);
    else if (r < 0.5 && !Array.isArray(parent)) delete parent[key];
    else if (r < 0.6 && Array.isArray(parent)) parent.splice(key, 0, structuredClone(v));
    else if (r < 0.7 && Array.isArray(parent)) parent.splice(key, 1);
    else if (r < 0.8 && typeof v === 'string') parent[key] = pick(names);
    else if (r < 0.88 && v !== null && typeof v === 'object' && !Array.isArray(v)) {
      Object.defineProperty(v, '__proto__', {
        value: { role: 'user' },
        enumerable: true,
        writable: true,
        configurable: true,
      });
    } else if (r < 0.94 && v !== null && typeof v === 'object' && !Array.isArray(v))
      v[pick(['type', 'role', 'id', 'content'])] = randomValue(names);
    else parent[key] = structuredClone(pick(all).v);
  }
  return root;
}

class Finding extends Error {}

function check(format, messages) {
  let session;
  try {
    session = Session.fromMessages(messages, { format, ids: 'deterministic', now: 1 });
  } catch (err) {
    if (err?.code !== 'E_INVALID_MESSAGE')
      throw new Finding(`fromMessages threw ${err?.code ?? err?.name}: ${err?.message}`);
    if (
      !Number.isInteger(err.index) ||
      err.index < 0 ||
      err.index >= messages.length ||
      typeof err.field !== 'string'
    ) {
      throw new Finding(`E_INVALID_MESSAGE without a usable index/field: ${err.message}`);
    }
    return false;
  }
  try {
    // What a reader accepted is a valid entry: the core's load found nothing wrong with its lines.
    const found = session.warnings.filter((w) => w.code?.startsWith('E_'));
    if (found.length > 0)
      throw new Finding(`the session file of an accepted read has load warnings: ${JSON.stringify(found[0])}`);
    const firstView = session.toLlmMessages();
    for (const f of allFormats) session.toMessages({ format: f });
    const before = session.toJsonl();
    const again = Session.fromJsonl(before);
    const size = again.size;
    const reloadedView = again.toLlmMessages();
    again.free();
    if (!isDeepStrictEqual(firstView, reloadedView))
      throw new Finding('the first provider view differs from that of the reloaded session file');
    if (size !== session.size) throw new Finding(`reloaded ${size} entries of ${session.size}`);
    try {
      session.appendMessages([{ role: 42 }], { format: 'pi' });
      throw new Finding('a bad pi message was accepted');
    } catch (err) {
      if (err instanceof Finding) throw err;
      if (session.toJsonl() !== before) throw new Finding('a refused appendMessages changed the session');
    }
  } catch (err) {
    if (err instanceof Finding) throw err;
    throw new Finding(`after a successful read: ${err?.code ?? err?.name}: ${err?.message}`);
  } finally {
    // After a finding the session may be unusable: the finding is what to report.
    try {
      session.free();
    } catch {}
  }
  return true;
}

const started = Date.now();
const stats = Object.fromEntries(formats.map((f) => [f.name, { runs: 0, accepted: 0 }]));
const firstSeed = seed;
let runs = 0;
while ((Date.now() - started) / 1000 < seconds) {
  const format = formats[runs % formats.length];
  const input = rand() < 0.1 ? structuredClone(pick(format.arrays)) : mutate(pick(format.arrays), format.names);
  runs++;
  try {
    stats[format.name].runs++;
    if (check(format.name, input)) stats[format.name].accepted++;
  } catch (err) {
    mkdirSync(outDir, { recursive: true });
    const file = path.join(outDir, `crash-${format.name}-${Date.now()}.json`);
    writeFileSync(
      file,
      JSON.stringify({ format: format.name, error: String(err?.message ?? err), messages: input }, null, 1),
    );
    console.error(
      `[fuzz-formats] ${format.name}: ${err?.message ?? err}\n  input: ${file}\n  seed ${firstSeed}, run ${runs}`,
    );
    process.exit(1);
  }
}
const secs = (Date.now() - started) / 1000;
console.log(
  `[fuzz-formats] seed ${firstSeed}: ${runs} runs in ${secs.toFixed(0)} s (${(runs / secs).toFixed(0)}/s), no finding`,
);
for (const [name, s] of Object.entries(stats)) console.log(`  ${name}: ${s.runs} runs, ${s.accepted} accepted`);
