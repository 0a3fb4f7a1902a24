// Fuzzes the session stores' input surface: the `SessionChanges` values `save(id, changes)` takes
// (src/js/storage/). The stores are JavaScript, so cargo-fuzz cannot reach them; this is their fuzz
// target. It drives `createDurableObjectStore` of the built package (the workerd entry's module,
// pkg/storage/durable-object.js) over an in-memory stand-in of a Durable Object's SQLite storage
// that runs exactly the statements the store issues, rolls a `transactionSync` back when its
// closure throws, refuses values over 2,000,000 UTF-8 bytes and keeps text as UTF-8 (a lone
// surrogate would come back as U+FFFD), as Durable Objects do. Each step saves either changes that
// follow a model of the stored file (appends, rewrites, resets; texts with "\r", quotes,
// astral characters, lines of up to 1.6 M units that the store splits into rows) or a mutation of
// such changes (a member of the wrong type, missing or extra, a line break or a lone surrogate in
// a text, indices out of order or out of range, a line count off by some, a stale `since` that
// claims fewer lines, `__proto__` members, not an object at all), and checks:
//   - valid changes are accepted, and `open()` then gives the model's bytes exactly;
//   - a refused save throws an Error with code E_INVALID_ARGUMENT, nothing else (no TypeError,
//     no SQL error), and leaves `open()` and `list()` as they were;
//   - an accepted mutation (one that happens to stay valid) is applied as the model applies it.
// The Chromium stores (OPFS, IndexedDB) share the checks (storage/lines.ts) and are driven by
// tests/browser/storage.test.mjs. A failing input is written to tests/out/fuzz-stores/ and the
// process exits 1.
//
//   node tests/fuzz/stores.mjs [--seconds N] [--seed S]
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const outDir = path.join(here, '..', 'out', 'fuzz-stores');
const { createDurableObjectStore } = await import(
  pathToFileURL(path.join(here, '..', 'node_modules', 'ctxfold', 'storage', 'durable-object.js')).href
);

const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
};
const seconds = Number(opt('seconds', 60));
const firstSeed = Number(opt('seed', Date.now() % 2 ** 31)) >>> 0;
let seed = firstSeed || 1;

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
const int = (n) => Math.floor(rand() * n);

// ----- an in-memory stand-in of ctx.storage (SQLite-backed Durable Object) ---------------------

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const MAX_VALUE = 2_000_000;

/** A SQLite TEXT value as a Durable Object keeps it: UTF-8, at most 2 MB. */
function sqlText(value) {
  if (typeof value !== 'string') return value;
  const bytes = encoder.encode(value);
  if (bytes.length > MAX_VALUE) throw new Error('SQLITE_TOOBIG: string or blob too big');
  return decoder.decode(bytes);
}

function fakeStorage() {
  let sessions = new Map();
  let lines = new Map();
  const key = (id, line, part) => `${id}\u0000${line}\u0000${part}`;
  const rows = (list) => ({ toArray: () => list, one: () => list[0] });
  const statements = {
    'SELECT line_count FROM ctxfold_sessions WHERE id = ?': (id) =>
      sessions.has(id) ? [{ line_count: sessions.get(id).line_count }] : [],
    'SELECT line, text FROM ctxfold_session_lines WHERE id = ? ORDER BY line, part': (id) =>
      [...lines.values()]
        .filter((r) => r.id === id)
        .sort((a, b) => a.line - b.line || a.part - b.part)
        .map(({ line, text }) => ({ line, text })),
    'DELETE FROM ctxfold_session_lines WHERE id = ?': (id) => {
      for (const [k, r] of lines) if (r.id === id) lines.delete(k);
      return [];
    },
    'DELETE FROM ctxfold_session_lines WHERE id = ? AND line = ?': (id, line) => {
      for (const [k, r] of lines) if (r.id === id && r.line === line) lines.delete(k);
      return [];
    },
    'INSERT INTO ctxfold_session_lines (id, line, part, text) VALUES (?, ?, ?, ?)': (id, line, part, text) => {
      const k = key(id, line, part);
      if (lines.has(k)) throw new Error('SQLITE_CONSTRAINT: UNIQUE constraint failed');
      lines.set(k, { id, line, part, text: sqlText(text) });
      return [];
    },
    'INSERT OR REPLACE INTO ctxfold_sessions (id, line_count, mark) VALUES (?, ?, ?)': (id, lineCount, mark) => {
      sessions.set(id, { line_count: lineCount, mark: sqlText(mark) });
      return [];
    },
    'SELECT id FROM ctxfold_sessions ORDER BY id': () => [...sessions.keys()].sort().map((id) => ({ id })),
  };
  return {
    sql: {
      exec(query, ...bindings) {
        const q = query.replace(/\s+/g, ' ').trim();
        if (q.startsWith('CREATE TABLE IF NOT EXISTS')) return rows([]);
        const run = statements[q];
        if (run === undefined) throw new Error(`fake storage: unknown statement ${q}`);
        return rows(run(...bindings));
      },
    },
    transactionSync(closure) {
      const saved = [new Map(sessions), new Map(lines)];
      try {
        return closure();
      } catch (err) {
        [sessions, lines] = saved;
        throw err;
      }
    },
  };
}

// ----- changes that follow a model, and their mutations ----------------------------------------

const PIECES = ['a', 'é', '🙂', '"', '\\', '\r', '\t', ' ', '{', '}', '文', '\u2028', 'x'.repeat(50)];

/** A line's text: mostly short, sometimes long enough to take several rows. */
function lineText() {
  if (rand() < 0.01) {
    // A prefix of 0–3 units puts the row boundaries anywhere, also inside a surrogate pair.
    const unit = pick(['é', '🙂', 'ab', '文']);
    return 'x'.repeat(int(4)) + unit.repeat(Math.ceil((300_000 + int(1_300_000)) / unit.length));
  }
  const n = int(rand() < 0.2 ? 400 : 12);
  let out = '';
  for (let i = 0; i < n; i++) out += pick(PIECES);
  return out;
}

/** Valid changes from `lines` (the stored file, or null when the session is not stored). */
function validChanges(lines, mark) {
  if (lines === null || rand() < 0.1) {
    const appended = Array.from({ length: int(6) }, lineText);
    return {
      since: lines === null ? null : pick([null, 'foreign']),
      mark: `m${int(1e9)}`,
      reset: true,
      rewritten: [],
      appended,
      lineCount: appended.length,
    };
  }
  const rewritten = [];
  for (let i = 0; i < lines.length; i++) if (rand() < 0.15) rewritten.push({ index: i, text: lineText() });
  const appended = Array.from({ length: int(4) }, lineText);
  return {
    since: mark,
    mark: `m${int(1e9)}`,
    reset: false,
    rewritten,
    appended,
    lineCount: lines.length + appended.length,
  };
}

const HOSTILE = [undefined, null, 0, -1, 1.5, Number.NaN, '', 'x', true, [], {}, [1], 2 ** 53, '\n', '\ud800'];

/** A mutation of `changes` (often invalid, sometimes still valid). */
function mutate(changes) {
  const c = structuredClone(changes);
  const fields = ['since', 'mark', 'reset', 'rewritten', 'appended', 'lineCount'];
  switch (int(10)) {
    case 0:
      c[pick(fields)] = pick(HOSTILE);
      break;
    case 1:
      delete c[pick(fields)];
      break;
    case 2:
      if (c.appended.length > 0) c.appended[int(c.appended.length)] = pick(['a\nb', 'x\ud83d', '\udc00y', 7, null]);
      else c.appended.push('a\nb');
      break;
    case 3:
      if (c.rewritten.length > 0) c.rewritten[int(c.rewritten.length)].text = pick(['a\nb', '\udfff', 1]);
      else c.rewritten.push({ index: int(3), text: 'r' });
      break;
    case 4:
      c.rewritten.push({ index: pick([-1, 0, 1.5, 10_000, c.lineCount, Number.NaN, '0']), text: 'r' });
      break;
    case 5:
      c.rewritten.reverse();
      if (c.rewritten.length < 2) c.rewritten.push({ index: 0, text: 'dup' }, { index: 0, text: 'dup' });
      break;
    case 6:
      c.lineCount += pick([-2, -1, 1, 3]);
      break;
    case 7:
      // A stale writer: changes from fewer lines than the store holds.
      c.reset = false;
      c.lineCount = Math.max(0, c.lineCount - 1 - int(3));
      c.appended = c.appended.slice(0, Math.min(c.appended.length, c.lineCount));
      break;
    case 8:
      return JSON.parse(
        `{"__proto__":{"reset":true},"since":null,"mark":"p","rewritten":[],"appended":[],"lineCount":0}`,
      );
    default:
      return pick([null, undefined, 'changes', 42, [], new Map()]);
  }
  return c;
}

/** What the model holds after `changes` (valid for `lines`). */
function applied(lines, changes) {
  const out = changes.reset ? [] : [...lines];
  for (const { index, text } of changes.rewritten) out[index] = text;
  out.push(...changes.appended);
  return out;
}

/** Whether `changes` are valid for `lines`: the oracle, written from the contract. */
function valid(lines, c) {
  const text = (t) => typeof t === 'string' && !t.includes('\n') && t.isWellFormed();
  if (c === null || typeof c !== 'object' || Array.isArray(c)) return false;
  if (!(c.since === null || typeof c.since === 'string') || typeof c.mark !== 'string') return false;
  if (typeof c.reset !== 'boolean' || !Array.isArray(c.rewritten) || !Array.isArray(c.appended)) return false;
  if (!Number.isSafeInteger(c.lineCount) || c.lineCount < 0 || !c.appended.every(text)) return false;
  let prev = -1;
  for (const r of c.rewritten) {
    if (r === null || typeof r !== 'object' || Array.isArray(r)) return false;
    if (!Number.isSafeInteger(r.index) || r.index <= prev || !text(r.text)) return false;
    prev = r.index;
  }
  if (c.reset) return c.rewritten.length === 0 && c.appended.length === c.lineCount;
  if (lines === null) return false;
  const before = c.lineCount - c.appended.length;
  return before === lines.length && prev < before;
}

const fileOf = (lines) => (lines === null ? null : Buffer.from(lines.length === 0 ? '' : `${lines.join('\n')}\n`));
const same = (bytes, want) => (bytes === null ? want === null : want !== null && Buffer.from(bytes).equals(want));

// ----- the loop -------------------------------------------------------------------------------

function fail(what, detail) {
  mkdirSync(outDir, { recursive: true });
  const file = path.join(outDir, `finding-${firstSeed}.json`);
  writeFileSync(
    file,
    JSON.stringify({ seed: firstSeed, what, ...detail }, (_, v) => (v === undefined ? '<undefined>' : v), 2).slice(
      0,
      1e6,
    ),
  );
  console.log(`FINDING (seed ${firstSeed}): ${what}\n  written to ${file}`);
  process.exit(1);
}

const deadline = Date.now() + seconds * 1000;
let runs = 0;
let accepted = 0;
let refused = 0;
let parts = 0;
while (Date.now() < deadline) {
  const storage = fakeStorage();
  const store = createDurableObjectStore(storage);
  const models = new Map(); // id → { lines, mark }
  const ids = ['a', 'b', 'ünï/code 🙂'];
  for (let step = 0; step < 40 && Date.now() < deadline; step++) {
    runs++;
    const id = pick(ids);
    const model = models.get(id) ?? { lines: null, mark: null };
    const good = validChanges(model.lines, model.mark);
    const changes = rand() < 0.5 ? good : mutate(good);
    const ok = valid(model.lines, changes);
    const listBefore = await store.list();
    let error = null;
    try {
      await store.save(id, changes);
    } catch (err) {
      error = err;
    }
    if (error === null) {
      if (!ok) fail('an invalid save was accepted', { id, model: model.lines?.length ?? null, changes });
      accepted++;
      model.lines = applied(model.lines, changes);
      model.mark = changes.mark;
      models.set(id, model);
      if (model.lines.some((l) => l.length > 1 << 19)) parts++;
    } else {
      if (ok) fail(`a valid save was refused: ${error.message}`, { id, model: model.lines?.length ?? null, changes });
      if (!(error instanceof Error) || error.code !== 'E_INVALID_ARGUMENT') {
        fail(`a refused save threw ${error?.code ?? error?.name}: ${error?.message}`, { id, changes });
      }
      refused++;
      const listAfter = await store.list();
      if (JSON.stringify(listAfter) !== JSON.stringify(listBefore))
        fail('a refused save changed list()', { id, changes });
    }
    const opened = await store.open(id);
    if (!same(opened, fileOf(model.lines))) {
      fail('open() differs from the model', {
        id,
        changes,
        accepted: error === null,
        got: opened?.length,
        want: fileOf(model.lines)?.length,
      });
    }
  }
}
console.log(
  `stores fuzz, seed ${firstSeed}, ${seconds} s: ${runs} runs, ${accepted} accepted, ${refused} refused, ${parts} with multi-row lines; no finding`,
);
