// A `SessionStore` in a Cloudflare Durable Object's SQLite storage (`ctx.storage.sql`): a row per
// line, a row per session with its line count and journal mark. A save is one `transactionSync`:
// it commits whole or not at all (a throw inside rolls it back), and the Durable Object's output
// gate holds the response until it is durable. Nothing here awaits: a save never lets another
// request of the object run in the middle of it.

import { checkChanges, checkFits, fileBytes, sessionId } from './lines.js';
import type { SessionChanges, SessionStore } from './types.js';

/**
 * What the store uses of a Durable Object's `ctx.storage` (the SQLite storage API, a class with
 * `new_sqlite_classes` in its migration): `sql.exec` and `transactionSync`.
 */
export interface DurableObjectSqlStorage {
  readonly sql: {
    exec(query: string, ...bindings: (string | number | null)[]): { toArray(): unknown[] };
  };
  transactionSync<T>(closure: () => T): T;
}

/**
 * A line longer than this many UTF-16 units is kept in several rows (`part` 0, 1, …): a SQLite
 * value of Durable Objects holds at most 2 MB, and this many units are at most 1.5 MB of UTF-8.
 */
const PART_UNITS = 1 << 19;

/** `text` cut into parts of at most PART_UNITS units, never between the two halves of a surrogate pair. */
function parts(text: string): string[] {
  if (text.length <= PART_UNITS) return [text];
  const out: string[] = [];
  let at = 0;
  while (at < text.length) {
    let end = Math.min(at + PART_UNITS, text.length);
    const unit = text.charCodeAt(end - 1);
    if (end < text.length && unit >= 0xd800 && unit <= 0xdbff) end -= 1;
    out.push(text.slice(at, end));
    at = end;
  }
  return out;
}

const SCHEMA = [
  `CREATE TABLE IF NOT EXISTS ctxfold_sessions (
     id TEXT PRIMARY KEY, line_count INTEGER NOT NULL, mark TEXT NOT NULL)`,
  `CREATE TABLE IF NOT EXISTS ctxfold_session_lines (
     id TEXT NOT NULL, line INTEGER NOT NULL, part INTEGER NOT NULL, text TEXT NOT NULL,
     PRIMARY KEY (id, line, part))`,
];

/**
 * A session store in a Durable Object's SQLite storage: pass `ctx.storage` of a class declared
 * with `new_sqlite_classes`. Tables `ctxfold_sessions` and `ctxfold_session_lines` are created on
 * first use. One object usually holds one session, but any number of ids may share it.
 */
export function createDurableObjectStore(storage: DurableObjectSqlStorage): SessionStore {
  if (typeof storage?.transactionSync !== 'function' || typeof storage.sql?.exec !== 'function') {
    throw new TypeError('createDurableObjectStore needs ctx.storage of a SQLite-backed Durable Object');
  }
  const { sql } = storage;
  let ready = false;
  const schema = (): void => {
    if (ready) return;
    for (const statement of SCHEMA) sql.exec(statement);
    ready = true;
  };
  const writeLine = (id: string, line: number, text: string): void => {
    parts(text).forEach((part, i) => {
      sql.exec('INSERT INTO ctxfold_session_lines (id, line, part, text) VALUES (?, ?, ?, ?)', id, line, i, part);
    });
  };
  return {
    async open(rawId: string): Promise<Uint8Array | null> {
      const id = sessionId(rawId);
      schema();
      const head = sql.exec('SELECT line_count FROM ctxfold_sessions WHERE id = ?', id).toArray()[0] as
        | { line_count: number }
        | undefined;
      if (head === undefined) return null;
      const rows = sql
        .exec('SELECT line, text FROM ctxfold_session_lines WHERE id = ? ORDER BY line, part', id)
        .toArray() as { line: number; text: string }[];
      const lines: string[] = [];
      for (const row of rows) {
        if (row.line === lines.length - 1) lines[row.line] += row.text;
        else if (row.line === lines.length) lines.push(row.text);
        else throw new Error(`ctxfold_session_lines of session ${JSON.stringify(id)} has no line ${lines.length}`);
      }
      if (lines.length !== head.line_count) {
        throw new Error(
          `session ${JSON.stringify(id)} records ${head.line_count} lines but ${lines.length} are stored`,
        );
      }
      return fileBytes(lines);
    },

    async save(rawId: string, rawChanges: SessionChanges): Promise<void> {
      const id = sessionId(rawId);
      const changes = checkChanges(rawChanges);
      schema();
      storage.transactionSync(() => {
        const head = sql.exec('SELECT line_count FROM ctxfold_sessions WHERE id = ?', id).toArray()[0] as
          | { line_count: number }
          | undefined;
        checkFits(id, head?.line_count ?? null, changes);
        if (changes.reset) sql.exec('DELETE FROM ctxfold_session_lines WHERE id = ?', id);
        for (const { index, text } of changes.rewritten) {
          sql.exec('DELETE FROM ctxfold_session_lines WHERE id = ? AND line = ?', id, index);
          writeLine(id, index, text);
        }
        const first = changes.lineCount - changes.appended.length;
        changes.appended.forEach((text, i) => {
          writeLine(id, first + i, text);
        });
        sql.exec(
          'INSERT OR REPLACE INTO ctxfold_sessions (id, line_count, mark) VALUES (?, ?, ?)',
          id,
          changes.lineCount,
          changes.mark,
        );
      });
    },

    async list(): Promise<string[]> {
      schema();
      const rows = sql.exec('SELECT id FROM ctxfold_sessions ORDER BY id').toArray() as { id: string }[];
      return rows.map((row) => row.id);
    },
  };
}
