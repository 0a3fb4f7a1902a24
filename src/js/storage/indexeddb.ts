// A `SessionStore` in IndexedDB: a record per line (object store `lines`, key `[id, index]`, the
// line's text) and a record per session (object store `sessions`, key `id`, `{ lineCount, mark }`).
// A save is one readwrite transaction over both: IndexedDB commits it whole or rolls it back
// whole (an abort, a closed tab, a quota error), so a reader sees the session before or after
// the save, never a mix. Works in windows and in workers.
import { invalidArgument } from '../core/errors.js';
import { checkChanges, checkFits, fileBytes, sessionId } from './lines.js';
import type { SessionChanges, SessionStore } from './types.js';

const LINES = 'lines';
const SESSIONS = 'sessions';

/** The record of a session in the `sessions` object store. */
interface SessionRecord {
  lineCount: number;
  mark: string;
}

/** The keys of the lines of session `id`: `[id, 0]` to `[id, Infinity]`. */
const linesOf = (id: string): IDBKeyRange => IDBKeyRange.bound([id, 0], [id, Number.POSITIVE_INFINITY]);

/** The result of `request`, as a promise. */
function result<T>(request: IDBRequest<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

/** Resolves when `tx` commits; rejects with `failure()` (or the transaction's error) when it aborts. */
function done(tx: IDBTransaction, failure: () => unknown): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onabort = () => reject(failure() ?? tx.error ?? new Error('IndexedDB transaction aborted'));
    tx.onerror = (event) => event.preventDefault(); // the abort that follows rejects
  });
}

/**
 * A session store in the IndexedDB database `dbName` (created on first use, version 1, object
 * stores `lines` and `sessions`). One readwrite transaction per save: the appended and rewritten
 * lines are put, the session's `{ lineCount, mark }` record is written, and changes that do not
 * start where the stored file ends abort it (`E_INVALID_ARGUMENT`, the store left as it was).
 */
export function createIndexedDbStore(dbName: string): SessionStore {
  if (typeof dbName !== 'string' || dbName.length === 0) throw invalidArgument('dbName must be a non-empty string');
  if (typeof indexedDB === 'undefined') throw new TypeError('createIndexedDbStore: this runtime has no indexedDB');
  let connection: Promise<IDBDatabase> | null = null;
  const db = (): Promise<IDBDatabase> => {
    if (connection === null) {
      const request = indexedDB.open(dbName, 1);
      request.onupgradeneeded = () => {
        const created = request.result;
        if (!created.objectStoreNames.contains(LINES)) created.createObjectStore(LINES);
        if (!created.objectStoreNames.contains(SESSIONS)) created.createObjectStore(SESSIONS);
      };
      connection = result(request).then((opened) => {
        // Another tab upgrading or deleting the database: let it, and reconnect on next use.
        opened.onversionchange = () => {
          opened.close();
          connection = null;
        };
        opened.onclose = () => {
          connection = null;
        };
        return opened;
      });
      connection.catch(() => {
        connection = null;
      });
    }
    return connection;
  };

  return {
    async open(rawId: string): Promise<Uint8Array | null> {
      const id = sessionId(rawId);
      const tx = (await db()).transaction([LINES, SESSIONS], 'readonly');
      const record = (await result(tx.objectStore(SESSIONS).get(id))) as SessionRecord | undefined;
      if (record === undefined) return null;
      const lines = (await result(tx.objectStore(LINES).getAll(linesOf(id)))) as string[];
      if (lines.length !== record.lineCount) {
        throw new Error(
          `session ${JSON.stringify(id)} records ${record.lineCount} lines but ${lines.length} are stored`,
        );
      }
      return fileBytes(lines);
    },

    async save(rawId: string, rawChanges: SessionChanges): Promise<void> {
      const id = sessionId(rawId);
      const changes = checkChanges(rawChanges);
      const tx = (await db()).transaction([LINES, SESSIONS], 'readwrite');
      let refused: unknown;
      const committed = done(tx, () => refused);
      const lines = tx.objectStore(LINES);
      const sessions = tx.objectStore(SESSIONS);
      // Every write is queued at once; the session record read first decides whether they stand:
      // changes that do not fit abort the transaction, which undoes the queued writes.
      const head = sessions.get(id);
      head.onsuccess = () => {
        try {
          checkFits(id, (head.result as SessionRecord | undefined)?.lineCount ?? null, changes);
        } catch (err) {
          refused = err;
          tx.abort();
        }
      };
      if (changes.reset) lines.delete(linesOf(id));
      for (const { index, text } of changes.rewritten) lines.put(text, [id, index]);
      const first = changes.lineCount - changes.appended.length;
      changes.appended.forEach((text, i) => {
        lines.put(text, [id, first + i]);
      });
      const record: SessionRecord = { lineCount: changes.lineCount, mark: changes.mark };
      sessions.put(record, id);
      await committed;
    },

    async list(): Promise<string[]> {
      const tx = (await db()).transaction(SESSIONS, 'readonly');
      const keys = await result(tx.objectStore(SESSIONS).getAllKeys());
      return keys.filter((key): key is string => typeof key === 'string');
    },
  };
}
