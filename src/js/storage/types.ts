// src/js/storage/types.ts — the contract between the journal and every store (journal40 creates this file;
// edge40 creates the identical file in its branch: keep it byte-identical, change nothing without both agreeing).
/** A position in a session's change journal, from `session.changes()`; opaque, JSON-safe. */
export type ChangeMark = string;
/** What changed in the session's JSONL file since a mark (spec: compaction §1, §6.7). */
export interface SessionChanges {
  /** The mark these changes start from; `null` when they start from nothing (the whole file). */
  readonly since: ChangeMark | null;
  /** The mark to pass to the next `changes()` call once these are stored. */
  readonly mark: ChangeMark;
  /** `true` when the store must drop what it holds and write `appended` as the whole file (first save,
   *  an unknown or foreign mark, a migration that rewrote the file). `rewritten` is then empty. */
  readonly reset: boolean;
  /** Lines rewritten in place (0 = the header line), each without its line break, in index order. */
  readonly rewritten: readonly {
    readonly index: number;
    readonly text: string;
  }[];
  /** Lines appended after the earlier last line, in order, each without its line break. */
  readonly appended: readonly string[];
  /** The file's line count once applied. */
  readonly lineCount: number;
}
/** A place sessions are kept. Hosts implement it for their own store. */
export interface SessionStore {
  /** The stored file's bytes, or `null` when no session has this id. */
  open(id: string): Promise<Uint8Array | null>;
  /** Applies `changes` atomically: after a crash the store holds the state before or after, and a torn
   *  last line (if the medium allows one) is reported by the loader, never silently dropped. */
  save(id: string, changes: SessionChanges): Promise<void>;
  /** The ids of the stored sessions. */
  list(): Promise<string[]>;
}
