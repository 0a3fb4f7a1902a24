// A `SessionStore` in the origin private file system (OPFS), for a dedicated worker: one file per
// session (`<id>.jsonl`, the id URI-encoded), written through a synchronous access handle.
//
// What "atomic" means here. OPFS has no transactions; it has an exclusive lock per file (a sync
// access handle: a second writer, in this tab or another, fails with NoModificationAllowedError
// instead of interleaving), `flush()`, and `move()`, which renames a file within the browser's
// storage in one step. So:
// - a save that only appends writes the new lines after the last byte and flushes. Cut short
//   (the tab closed, the worker terminated), the file ends with a torn line: the session loader
//   reports it, it is never silently dropped (the contract's "torn last line"); it counts as
//   the file's last line, and the next append writes its missing line break first;
// - a save that rewrites lines (pruning, shake, a reset) writes the whole new file to
//   `<id>.jsonl.tmp`, flushes it, then moves it over `<id>.jsonl`. Until the move the name
//   holds the old file, after it the new one: a reader never sees a half-written rewrite. A
//   `.tmp` left by a crash before the move is ignored and overwritten by the next rewrite.
// OPFS promises nothing about a power loss (the browser decides when its storage reaches the
// disk); the states above are what a closed tab or a killed worker can leave.
import { invalidArgument } from '../core/errors.js';
import { checkChanges, checkFits, sessionId, utf8 } from './lines.js';
import type { SessionChanges, SessionStore } from './types.js';

/** The part of a `FileSystemSyncAccessHandle` the store uses (dedicated workers only). */
interface SyncAccessHandle {
  read(buffer: Uint8Array, options?: { at?: number }): number;
  write(buffer: Uint8Array, options?: { at?: number }): number;
  truncate(size: number): void;
  getSize(): number;
  flush(): void;
  close(): void;
}

/** A file handle with the members of the File System Access standard that TypeScript's DOM library lacks. */
interface OpfsFileHandle extends FileSystemFileHandle {
  createSyncAccessHandle(): Promise<SyncAccessHandle>;
  move(destination: FileSystemDirectoryHandle, name: string): Promise<void>;
}

/** Where `createOpfsStore` keeps its files. */
export interface OpfsStoreOptions {
  /**
   * The directory: a handle, or the name of a directory in the OPFS root (created when missing).
   * Default `'ctxfold-sessions'`.
   */
  directory?: FileSystemDirectoryHandle | string;
}

const SUFFIX = '.jsonl';
const TEMP = '.tmp';
const NEWLINE = 0x0a;
/** How many times `open` looks a session's file up when a move over it is still landing (~0.5 s in all). */
const OPEN_ATTEMPTS = 10;

/** The file name of session `id`: URI-encoded, so any id is a valid OPFS name. */
const fileName = (id: string): string => `${encodeURIComponent(id)}${SUFFIX}`;

/** Whether `err` is the DOMException `name`. */
const isDomError = (err: unknown, name: string): boolean =>
  typeof err === 'object' && err !== null && (err as { name?: unknown }).name === name;

/** The whole content of an open handle. */
function readAll(handle: SyncAccessHandle): Uint8Array {
  const out = new Uint8Array(handle.getSize());
  let at = 0;
  while (at < out.length) {
    const n = handle.read(out.subarray(at), { at });
    if (n <= 0) break;
    at += n;
  }
  return out.subarray(0, at);
}

/** Writes all of `bytes` at `at`. */
function writeAll(handle: SyncAccessHandle, bytes: Uint8Array, at: number): void {
  let done = 0;
  while (done < bytes.length) {
    const n = handle.write(bytes.subarray(done), { at: at + done });
    if (n <= 0) throw new Error('OPFS write made no progress (quota?)');
    done += n;
  }
}

/**
 * The lines of a file's bytes as `[start, end)` byte ranges without their "\n", and whether the
 * last one ends with its "\n" (a torn last line does not; it still counts as a line).
 */
function lineRanges(bytes: Uint8Array): { ranges: [number, number][]; terminated: boolean } {
  const ranges: [number, number][] = [];
  let start = 0;
  for (let i = 0; i < bytes.length; i++) {
    if (bytes[i] === NEWLINE) {
      ranges.push([start, i]);
      start = i + 1;
    }
  }
  const terminated = start === bytes.length;
  if (!terminated) ranges.push([start, bytes.length]);
  return { ranges, terminated };
}

/** What the store knows of a file it wrote last: its size and line count (valid while the size matches). */
interface Known {
  size: number;
  lines: number;
}

/**
 * A session store in the origin private file system, for a dedicated worker (synchronous access
 * handles exist only there; `open` and `list` work anywhere). Appends are written at the end of
 * the file; rewrites go through a temporary file and a move (see the top of this file for what
 * that guarantees). Two writers of one session cannot interleave: the second's save fails with
 * the browser's NoModificationAllowedError while the first holds the file.
 */
export function createOpfsStore(options: OpfsStoreOptions = {}): SessionStore {
  const where = options.directory ?? 'ctxfold-sessions';
  if (typeof where !== 'string' && typeof where?.getFileHandle !== 'function') {
    throw invalidArgument('options.directory must be a directory name or a FileSystemDirectoryHandle');
  }
  if (typeof where === 'string' && (where.length === 0 || /[/\\]/.test(where) || where === '.' || where === '..')) {
    throw invalidArgument('options.directory must be one directory name (no slash)');
  }
  let directory: Promise<FileSystemDirectoryHandle> | null = null;
  const dir = (): Promise<FileSystemDirectoryHandle> => {
    if (directory === null) {
      directory =
        typeof where === 'string'
          ? navigator.storage.getDirectory().then((root) => root.getDirectoryHandle(where, { create: true }))
          : Promise.resolve(where);
      directory.catch(() => {
        directory = null;
      });
    }
    return directory;
  };
  const known = new Map<string, Known>();

  /** The file of `id`, or null when there is none. */
  const existing = async (id: string): Promise<OpfsFileHandle | null> => {
    try {
      return (await (await dir()).getFileHandle(fileName(id))) as OpfsFileHandle;
    } catch (err) {
      if (isDomError(err, 'NotFoundError')) return null;
      throw err;
    }
  };

  /** Writes `chunks` as the whole file of `id`: a temporary file, flushed, then moved over it. */
  const replace = async (id: string, chunks: Uint8Array[], lines: number): Promise<void> => {
    const folder = await dir();
    const name = fileName(id);
    const temp = (await folder.getFileHandle(name + TEMP, { create: true })) as OpfsFileHandle;
    const handle = await temp.createSyncAccessHandle();
    let size = 0;
    try {
      handle.truncate(0);
      for (const chunk of chunks) {
        writeAll(handle, chunk, size);
        size += chunk.length;
      }
      handle.flush();
    } finally {
      handle.close();
    }
    known.delete(id);
    await temp.move(folder, name);
    known.set(id, { size, lines });
  };

  return {
    async open(rawId: string): Promise<Uint8Array | null> {
      const id = sessionId(rawId);
      // A rewrite's `move()` cut short by a terminated worker can still be finishing in the
      // browser, which replaces the destination in two steps: the name is found, then its file
      // is not. The name is looked up again until the move has landed.
      for (let attempt = 1; ; attempt++) {
        const file = await existing(id);
        if (file === null) return null;
        try {
          return new Uint8Array(await (await file.getFile()).arrayBuffer());
        } catch (err) {
          if (!isDomError(err, 'NotFoundError') || attempt === OPEN_ATTEMPTS) throw err;
          await new Promise((resolve) => setTimeout(resolve, attempt * 10));
        }
      }
    },

    async save(rawId: string, rawChanges: SessionChanges): Promise<void> {
      const id = sessionId(rawId);
      const changes = checkChanges(rawChanges);
      if (changes.reset) {
        await replace(
          id,
          changes.appended.map((line) => utf8(`${line}\n`)),
          changes.lineCount,
        );
        return;
      }
      const file = await existing(id);
      if (file === null) return checkFits(id, null, changes);
      const handle = await file.createSyncAccessHandle();
      let chunks: Uint8Array[];
      try {
        const size = handle.getSize();
        const cached = known.get(id);
        let file: { ranges: [number, number][]; terminated: boolean } | null = null;
        let bytes: Uint8Array | null = null;
        let lines: number;
        if (cached !== undefined && cached.size === size && changes.rewritten.length === 0) {
          lines = cached.lines;
        } else {
          bytes = readAll(handle);
          file = lineRanges(bytes);
          lines = file.ranges.length;
        }
        checkFits(id, lines, changes);
        // After a torn last line (an append cut short, which the loader reported), its line
        // break first: the line stays as the loader read it.
        const torn = file !== null && !file.terminated;
        const tail = utf8(`${torn ? '\n' : ''}${changes.appended.map((line) => `${line}\n`).join('')}`);
        if (bytes === null || file === null || changes.rewritten.length === 0) {
          // Appends only: after the last byte, in place.
          writeAll(handle, tail, size);
          handle.flush();
          known.set(id, { size: size + tail.length, lines: changes.lineCount });
          return;
        }
        // Rewrites: the unchanged spans of the old file around each rewritten line, then the appends.
        chunks = [];
        let from = 0;
        for (const { index, text } of changes.rewritten) {
          const [start, end] = file.ranges[index] as [number, number];
          chunks.push(bytes.subarray(from, start), utf8(text));
          from = end;
        }
        chunks.push(bytes.subarray(from), tail);
      } finally {
        handle.close();
      }
      await replace(id, chunks, changes.lineCount);
    },

    async list(): Promise<string[]> {
      const ids: string[] = [];
      // `keys()` of a directory handle: async iteration, which TypeScript's DOM library lacks.
      const folder = (await dir()) as FileSystemDirectoryHandle & { keys(): AsyncIterable<string> };
      for await (const name of folder.keys()) {
        if (!name.endsWith(SUFFIX)) continue;
        try {
          ids.push(decodeURIComponent(name.slice(0, -SUFFIX.length)));
        } catch {
          // not a name this store wrote
        }
      }
      return ids.sort();
    },
  };
}
