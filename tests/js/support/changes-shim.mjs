// A stand-in for `session.changes(since?)` (issue 40's journal, built in parallel) for the store
// tests only, never shipped: it compares the lines of `session.toBytes()` with the lines it saw at
// the previous call and reports the difference as a `SessionChanges` (src/js/storage/types.ts).
// Its cost is the whole file, not the change; what it returns has the journal's shape, which is
// all the stores see. `installChangesShim(Session)` adds it as `Session.prototype.changes` only
// when the package has no such method (once the journal lands, the real one is used).
// Plain JavaScript without Node.js imports: the browser tests load it in pages and workers.

const decoder = new TextDecoder();
/** The lines each session had at its last call, and the mark handed out then. */
const seen = new WeakMap();
let serial = 0;

/** The lines of a session file (each without its "\n"). */
function linesOf(bytes) {
  const text = decoder.decode(bytes);
  if (text === '') return [];
  if (!text.endsWith('\n')) throw new Error('changes shim: a file without a final newline is not modelled');
  return text.slice(0, -1).split('\n');
}

/** What changed in `session`'s file since `since` (a mark from the previous call, or nothing). */
export function changesOf(session, since) {
  const lines = linesOf(session.toBytes());
  const before = seen.get(session);
  const mark = `shim:${++serial}`;
  seen.set(session, { mark, lines });
  const from = since ?? null;
  if (before === undefined || from === null || from !== before.mark || lines.length < before.lines.length) {
    return { since: from, mark, reset: true, rewritten: [], appended: lines, lineCount: lines.length };
  }
  const rewritten = [];
  for (let i = 0; i < before.lines.length; i++) {
    if (lines[i] !== before.lines[i]) rewritten.push({ index: i, text: lines[i] });
  }
  return {
    since: from,
    mark,
    reset: false,
    rewritten,
    appended: lines.slice(before.lines.length),
    lineCount: lines.length,
  };
}

/** The mark of the bytes each session was loaded from (`session.loadMark`). */
const loadMarks = new WeakMap();

/**
 * Adds `changes(since?)` to `Session.prototype` when the package lacks it, and `loadMark` (the
 * journal's mark of the bytes `Session.fromJsonl` loaded, `null` when the session's file is not
 * those bytes, as after a migration); says whether it did.
 */
export function installChangesShim(Session) {
  if (typeof Session.prototype.changes === 'function') return false;
  Object.defineProperty(Session.prototype, 'changes', {
    configurable: true,
    writable: true,
    value(since) {
      return changesOf(this, since);
    },
  });
  if (!('loadMark' in Session.prototype)) {
    const fromJsonl = Session.fromJsonl;
    Session.fromJsonl = function (input, options) {
      const session = fromJsonl.call(this, input, options);
      const loaded =
        typeof input === 'string'
          ? new TextEncoder().encode(input)
          : new Uint8Array(input.buffer ?? input, input.byteOffset ?? 0, input.byteLength);
      const bytes = session.toBytes();
      const same = loaded.length === bytes.length && loaded.every((b, i) => b === bytes[i]);
      if (same && (bytes.length === 0 || bytes.at(-1) === 10))
        loadMarks.set(session, changesOf(session, undefined).mark);
      return session;
    };
    Object.defineProperty(Session.prototype, 'loadMark', {
      configurable: true,
      get() {
        return loadMarks.get(this) ?? null;
      },
    });
  }
  return true;
}

/** `session.changes(since)`: the package's journal when it exists, else the shim. */
export function changes(session, since) {
  return typeof session.changes === 'function' ? session.changes(since) : changesOf(session, since);
}
