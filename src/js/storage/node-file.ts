// The Node.js file store (docs/guide/storage.md "Node files"): one JSONL file per session in a
// folder, saved from `session.changes()` at the cost of the change. Appended lines are appended
// to the file; rewritten lines (a prune, a shake, a compaction's `tokensAfter`) and resets are
// written to a temporary file that is renamed over the session's file (atomic on POSIX and
// Windows file systems); with `fsync: true` the file and then the folder are flushed. A lock
// file keeps two writers (processes or calls) from interleaving. The rules the lines follow are
// the core's (spec: compaction §1, §6.7): this file only moves bytes.
/// <reference types="node" />
import { Buffer } from 'node:buffer';
import * as nodeFs from 'node:fs/promises';
import { hostname } from 'node:os';
import path from 'node:path';
import { codedError, invalidArgument } from '../core/errors.js';
import type { SessionChanges, SessionStore } from './types.js';

/** Options of `createFileStore`. */
export interface FileStoreOptions {
  /**
   * Flush each save to the disk before it resolves: the file (`fsync`) and, after a rename or
   * the file's creation, the folder. Slower; without it a power cut (not a process crash) can
   * lose the last saves. Default `false`.
   */
  fsync?: boolean;
  /**
   * How long a save waits for another writer's lock before it fails with `E_LOCKED`, in
   * milliseconds. Default 5,000; 0 fails at once.
   */
  lockWaitMs?: number;
  /**
   * A lock older than this many milliseconds is taken over as stale (its writer died without
   * removing it), as is, at once, a lock of a process of this host that no longer runs.
   * Default 60,000: no save of a session takes that long.
   */
  staleLockMs?: number;
  /**
   * The file system calls the store makes (`node:fs/promises` by default): for tests that
   * inject faults.
   * @internal
   */
  fs?: FileStoreFs;
}

/** The part of `node:fs/promises` the store uses. @internal */
export interface FileStoreFs {
  open: typeof nodeFs.open;
  readFile: typeof nodeFs.readFile;
  readdir: typeof nodeFs.readdir;
  rename: typeof nodeFs.rename;
  unlink: typeof nodeFs.unlink;
  stat: typeof nodeFs.stat;
  mkdir: typeof nodeFs.mkdir;
}

/** The store of `createFileStore`: a `SessionStore` over `<dir>/<id>.jsonl` files. */
export interface FileStore extends SessionStore {
  /** The folder. */
  readonly dir: string;
  /** The path of a session's file (`E_INVALID_ARGUMENT` for an id that is not a plain name). */
  pathOf(id: string): string;
}

/** Session ids are plain file names: letters, digits, `.`, `_`, `-`; no path, no `..`. */
const ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}$/;
const EXT = '.jsonl';
const NEWLINE = 0x0a;
const NL = Buffer.from('\n');
/** Bytes gathered per write of a rewritten file. */
const BATCH = 4 << 20;

function checkId(id: unknown): string {
  if (typeof id !== 'string' || !ID.test(id) || id.includes('..')) {
    throw invalidArgument(
      `session id ${JSON.stringify(id)}: use 1-200 letters, digits, '.', '_' or '-' (no path, no '..')`,
    );
  }
  return id;
}

function checkChanges(changes: unknown): SessionChanges {
  const c = changes as SessionChanges;
  const ok =
    typeof c === 'object' &&
    c !== null &&
    typeof c.reset === 'boolean' &&
    Array.isArray(c.appended) &&
    Array.isArray(c.rewritten) &&
    Number.isInteger(c.lineCount) &&
    c.appended.every((t) => typeof t === 'string' && !t.includes('\n')) &&
    c.rewritten.every(
      (r) => Number.isInteger(r?.index) && r.index >= 0 && typeof r.text === 'string' && !r.text.includes('\n'),
    );
  if (!ok) throw invalidArgument('save(id, changes): changes must be what session.changes() returned');
  return c;
}

const codeOf = (e: unknown): unknown =>
  typeof e === 'object' && e !== null ? (e as { code?: unknown }).code : undefined;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Whether a process of this host with this id runs (a kill of signal 0 only checks). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return codeOf(e) === 'EPERM';
  }
}

/**
 * A store of session files in `dir` (created when missing): `<dir>/<id>.jsonl`, with
 * `<id>.lock` while a save runs. See docs/guide/storage.md for the lock's stale rule and what
 * a crash leaves.
 */
export function createFileStore(dir: string, options: FileStoreOptions = {}): FileStore {
  if (typeof dir !== 'string' || dir === '') throw invalidArgument('createFileStore(dir): dir must be a folder path');
  const fs = options.fs ?? nodeFs;
  const fsync = options.fsync === true;
  const lockWaitMs = options.lockWaitMs ?? 5_000;
  const staleLockMs = options.staleLockMs ?? 60_000;
  const root = path.resolve(dir);
  const host = hostname();
  let made: Promise<unknown> | null = null;
  /** Saves of this store run one after the other per id (the lock file orders the processes). */
  const queues = new Map<string, Promise<unknown>>();
  const pathOf = (id: string) => path.join(root, checkId(id) + EXT);
  const ready = () => {
    made ??= fs.mkdir(root, { recursive: true });
    return made;
  };

  async function syncDir(): Promise<void> {
    if (!fsync) return;
    const d = await fs.open(root, 'r');
    try {
      await d.sync();
    } catch (e) {
      // Some systems (Windows) cannot flush a folder; the file itself was flushed.
      if (!['EPERM', 'EISDIR', 'EINVAL', 'EBADF'].includes(codeOf(e) as string)) throw e;
    } finally {
      await d.close();
    }
  }

  /** Takes `<id>.lock`; returns its release. */
  async function lock(id: string): Promise<() => Promise<void>> {
    const file = path.join(root, `${id}.lock`);
    const started = Date.now();
    for (let attempt = 0; ; attempt++) {
      try {
        const h = await fs.open(file, 'wx');
        try {
          await h.writeFile(JSON.stringify({ pid: process.pid, host, at: Date.now() }));
        } catch (e) {
          await h.close().catch(() => undefined);
          await fs.unlink(file).catch(() => undefined);
          throw e;
        }
        await h.close();
        return () => fs.unlink(file).catch(() => undefined);
      } catch (e) {
        if (codeOf(e) !== 'EEXIST') throw e;
      }
      if (await stale(file)) {
        await fs.unlink(file).catch(() => undefined);
        continue;
      }
      if (Date.now() - started >= lockWaitMs) {
        throw codedError('E_LOCKED', `session ${id} is being saved by another writer (${file} exists)`);
      }
      await sleep(Math.min(5 * 2 ** Math.min(attempt, 4), 50));
    }
  }

  /** A lock whose writer died: of a process of this host that no longer runs, or too old. */
  async function stale(file: string): Promise<boolean> {
    let mtimeMs: number;
    try {
      mtimeMs = (await fs.stat(file)).mtimeMs;
    } catch {
      return false; // gone meanwhile: take it on the next attempt
    }
    if (Date.now() - mtimeMs > staleLockMs) return true;
    try {
      const owner = JSON.parse(await fs.readFile(file, 'utf8')) as {
        pid?: unknown;
        host?: unknown;
      };
      return owner.host === host && typeof owner.pid === 'number' && owner.pid !== process.pid && !running(owner.pid);
    } catch {
      return false; // gone, or written in part by a writer that died: judged by its age
    }
  }

  /**
   * Writes `chunks` to a temporary file `<id>.jsonl.tmp-<pid>` and renames it over `file`.
   * Temporary files a writer killed midway left are removed first.
   */
  async function replace(id: string, file: string, lines: Iterable<Uint8Array | string>): Promise<void> {
    const prefix = `${id}${EXT}.tmp-`;
    for (const name of await fs.readdir(root)) {
      if (name.startsWith(prefix)) await fs.unlink(path.join(root, name)).catch(() => undefined);
    }
    const temp = `${file}.tmp-${process.pid}`;
    const h = await fs.open(temp, 'w');
    try {
      // Each line and its break go into a buffer of a few MB, written when full: one call per
      // batch, and a line's text is encoded once, straight into it.
      const batch = Buffer.allocUnsafe(BATCH);
      let at = 0;
      for (const line of lines) {
        const size = (typeof line === 'string' ? Buffer.byteLength(line) : line.length) + 1;
        if (at + size > BATCH && at > 0) {
          await h.write(batch, 0, at);
          at = 0;
        }
        if (size > BATCH) {
          await h.write(Buffer.concat([typeof line === 'string' ? Buffer.from(line) : line, NL]));
          continue;
        }
        if (typeof line === 'string') at += batch.write(line, at);
        else {
          batch.set(line, at);
          at += line.length;
        }
        batch[at++] = NEWLINE;
      }
      if (at > 0) await h.write(batch, 0, at);
      if (fsync) await h.sync();
      await h.close();
      await fs.rename(temp, file);
    } catch (e) {
      await h.close().catch(() => undefined);
      await fs.unlink(temp).catch(() => undefined);
      throw e;
    }
    await syncDir();
  }

  /** The lines of a stored file (without their breaks) as views of its bytes. */
  function linesOf(bytes: Uint8Array): Uint8Array[] {
    const out: Uint8Array[] = [];
    const end = bytes.length > 0 && bytes[bytes.length - 1] === NEWLINE ? bytes.length - 1 : bytes.length;
    if (bytes.length === 0) return out;
    let at = 0;
    for (;;) {
      const nl = bytes.indexOf(NEWLINE, at);
      if (nl < 0 || nl >= end) {
        out.push(bytes.subarray(at, end));
        return out;
      }
      out.push(bytes.subarray(at, nl));
      at = nl + 1;
    }
  }

  async function apply(id: string, c: SessionChanges): Promise<void> {
    const file = pathOf(id);
    if (c.reset) {
      await replace(id, file, c.appended);
      return;
    }
    if (c.rewritten.length > 0) {
      let bytes: Uint8Array;
      try {
        bytes = await fs.readFile(file);
      } catch (e) {
        if (codeOf(e) === 'ENOENT') throw stateError(id, 0, c);
        throw e;
      }
      let lines = linesOf(bytes);
      // Saved already (a save that renamed its file, then failed to flush the folder, is retried).
      const tail = lines.length - c.appended.length;
      if (
        lines.length === c.lineCount &&
        c.appended.length > 0 &&
        c.appended.every((t, k) => Buffer.from(t).equals(lines[tail + k] as Uint8Array))
      ) {
        lines = lines.slice(0, tail);
      }
      if (lines.length + c.appended.length !== c.lineCount) throw stateError(id, lines.length, c);
      for (const r of c.rewritten) {
        if (r.index >= lines.length) throw stateError(id, lines.length, c);
        lines[r.index] = Buffer.from(r.text);
      }
      await replace(id, file, [...lines, ...c.appended]);
      return;
    }
    if (c.appended.length === 0) return;
    // Appends only: the lines go at the end of the file as it is.
    let h: nodeFs.FileHandle;
    try {
      h = await fs.open(file, 'r+');
    } catch (e) {
      if (codeOf(e) === 'ENOENT') throw stateError(id, 0, c);
      throw e;
    }
    let size = -1;
    try {
      size = (await h.stat()).size;
      // A file without its final line break (as loaded, or a torn last line a crash left, which
      // the loader reports): the break comes first, as `toBytes()` writes it.
      let lead = '';
      if (size > 0) {
        const last = Buffer.alloc(1);
        await h.read(last, 0, 1, size - 1);
        if (last[0] !== NEWLINE) lead = '\n';
      }
      const data = Buffer.from(`${lead + c.appended.join('\n')}\n`);
      await h.write(data, 0, data.length, size);
      if (fsync) await h.sync();
    } catch (e) {
      // Cut off what was written in part: the file is as before.
      if (size >= 0) await h.truncate(size).catch(() => undefined);
      throw e;
    } finally {
      await h.close();
    }
  }

  return {
    dir: root,
    pathOf,
    async open(id: string): Promise<Uint8Array | null> {
      const file = pathOf(id);
      try {
        const bytes = await fs.readFile(file);
        return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
      } catch (e) {
        if (codeOf(e) === 'ENOENT') return null;
        throw e;
      }
    },
    async save(id: string, changes: SessionChanges): Promise<void> {
      checkId(id);
      const c = checkChanges(changes);
      const run = async () => {
        await ready();
        const release = await lock(id);
        try {
          await apply(id, c);
        } finally {
          await release();
        }
      };
      const before = queues.get(id) ?? Promise.resolve();
      const done = before.then(run, run);
      const tail = done.catch(() => undefined);
      queues.set(id, tail);
      void tail.then(() => {
        if (queues.get(id) === tail) queues.delete(id);
      });
      return done;
    },
    async list(): Promise<string[]> {
      let names: string[];
      try {
        names = await fs.readdir(root);
      } catch (e) {
        if (codeOf(e) === 'ENOENT') return [];
        throw e;
      }
      return names
        .filter((n) => n.endsWith(EXT) && ID.test(n.slice(0, -EXT.length)))
        .map((n) => n.slice(0, -EXT.length))
        .sort();
    },
  };
}

/** The stored file is not the one the changes start from (another writer, or a lost save). */
function stateError(id: string, lines: number, c: SessionChanges) {
  return invalidArgument(
    `session ${id}: the stored file has ${lines} lines, the changes since ${c.since ?? 'nothing'} ` +
      `start from ${c.lineCount - c.appended.length}: save session.changes(null) to write it whole`,
  );
}
