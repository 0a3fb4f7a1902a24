// The errors of the JS API. Every Error ctxfold throws carries a stable `code` (the `ErrorCode`
// union below); the ones made here also keep what caused them: `cause` is the value a
// callback threw (or the Error it was built from), `status` the HTTP status it reported.

/** Stable error codes: every `Error` thrown by ctxfold carries one in `code`. */
export type ErrorCode =
  /** A JSONL line is not valid JSON (or not a JSON object). */
  | 'E_JSONL_LINE'
  /** The input does not start with a session header. */
  | 'E_NOT_A_SESSION'
  /** The header's `version` is newer than this library understands. */
  | 'E_VERSION_TOO_NEW'
  /** A line holds bytes that are not valid UTF-8. */
  | 'E_INVALID_UTF8'
  /** An entry id that the session does not hold. */
  | 'E_UNKNOWN_ENTRY'
  /** An entry's `parentId` names no entry of the session. */
  | 'E_UNKNOWN_PARENT'
  /** Following `parentId` links returns to an entry already visited. */
  | 'E_PARENT_CYCLE'
  /** Two entries share one id. */
  | 'E_DUPLICATE_ID'
  /** A JSON object line that is not a usable entry (no string `type` or `id`). */
  | 'E_INVALID_ENTRY'
  /** An entry's body does not have the shape its type requires. */
  | 'E_INVALID_ENTRY_BODY'
  /** A session file was migrated from an older format version (a load warning). */
  | 'E_MIGRATED'
  /** Invalid options or settings; the message names the field. */
  | 'E_SETTINGS'
  /** An argument of the wrong type or value (the message names it). */
  | 'E_INVALID_ARGUMENT'
  /** Compaction has nothing to summarize. */
  | 'E_NOTHING_TO_COMPACT'
  /** The active path already ends with a compaction. */
  | 'E_ALREADY_COMPACTED'
  /** A summarizer callback or the remote endpoint failed (see `cause` and `status`). */
  | 'E_SUMMARIZER'
  /** The operation was aborted through its AbortSignal; nothing was written. */
  | 'E_ABORTED'
  /** A compaction or navigation plan no longer fits the session. */
  | 'E_STALE_PLAN'
  /** A compaction plan was committed before all its requests were answered. */
  | 'E_PLAN_INCOMPLETE'
  /** A hook cancelled the operation. */
  | 'E_CANCELLED'
  /** Another compaction of this session is still running. */
  | 'E_BUSY'
  /** snapcompact: a shape name, shape record or shape field is invalid. */
  | 'E_SHAPE'
  /** snapcompact: a render option is out of range (frame size, page count, …). */
  | 'E_OPTIONS'
  /** snapcompact: a font is unknown, a fallback font cannot be read, or a shape needs a fallback font that is not registered. */
  | 'E_FONT'
  /** snapcompact: PNG encoding failed (an internal error). */
  | 'E_ENCODE'
  /** `undoCompaction()`: the entry is not a compaction, or the leaf is no longer on it. */
  | 'E_UNDO_REFUSED'
  /**
   * A snapcompact commit would not make the context smaller than the one it replaces, or
   * could not bring it under the window even with fewer frames; nothing was written, and
   * `compact()` moves on to the next method.
   */
  | 'E_NO_REDUCTION'
  /** The browser entry's `init()` has not been awaited yet. */
  | 'E_NOT_INITIALISED'
  /**
   * A message is malformed: one of another format (`fromMessages`, `appendMessages`), or an
   * agent message the core would not read back as written (`appendMessage`, `append` of a
   * `message` entry, `Maintainer.afterResponse`: an unknown role, a missing or mistyped
   * field, a block of an unknown type, a count out of range, a provider's response, a
   * circular object). `field` is the path inside the message (`content[2].text`), `index`
   * its position in the array when there is one. Nothing was written.
   */
  | 'E_INVALID_MESSAGE'
  /** A session or plan was used after its `free()`. */
  | 'E_FREED'
  /** The host's `tokenCounter` threw (the thrown value is the error's `cause`). */
  | 'E_TOKEN_COUNTER'
  /** A session store's save waited too long for another writer's lock (`createFileStore`). */
  | 'E_LOCKED';

/** The shape of errors thrown by ctxfold. */
export interface CtxfoldError extends Error {
  code: ErrorCode;
  /**
   * What caused the error, when it wraps one: for `E_SUMMARIZER`, the value the summarizer
   * callback threw (any value, not only an Error) or, for the remote endpoint, an Error with
   * the HTTP `status` whose own `cause` is the fetch error when the request did not get through.
   * Absent on errors ctxfold raises itself (argument checks, session errors, …).
   */
  cause?: unknown;
  /**
   * The HTTP status behind an `E_SUMMARIZER` error, where there is one: the remote endpoint's
   * response status (408 for its time-out), or the `status` / `statusCode` of the Error the
   * summarizer threw. Absent otherwise.
   */
  status?: number;
  /**
   * `E_SUMMARIZER` of the `remote` method's OpenAI provider-native lanes: the lane whose failure
   * is the `cause` (`'v2'` streaming `compaction_trigger`, `'v1'` `/responses/compact`).
   */
  lane?: 'v1' | 'v2';
  /** `E_INVALID_MESSAGE`: the path of the malformed field inside the message (`content[2].text`; empty: the whole message). */
  field?: string;
  /** `E_INVALID_MESSAGE` of a message in an array: its position. */
  index?: number;
}

/**
 * A coded Error. `cause` is set only when given (so `'cause' in err` says whether there is
 * one), `status` only when it is a finite number.
 * @internal
 */
export function codedError(
  code: ErrorCode,
  message: string,
  { cause, status }: { cause?: unknown; status?: number | undefined } = {},
): CtxfoldError {
  const err = (cause === undefined ? new Error(message) : new Error(message, { cause })) as CtxfoldError;
  err.code = code;
  if (Number.isFinite(status)) err.status = status as number;
  return err;
}

/** Misuse of the API by the caller: a wrong type, a missing value. @internal */
export function invalidArgument(message: string): CtxfoldError {
  return codedError('E_INVALID_ARGUMENT', message);
}

/**
 * The error of an aborted operation, `E_ABORTED`: `Aborted: …`, or `Compaction aborted: …`
 * when `operation` is `'Compaction'`.
 * @internal
 */
export function abortError(operation?: string): CtxfoldError {
  const what = operation === undefined ? 'Aborted' : `${operation} aborted`;
  return codedError('E_ABORTED', `${what}: the signal was aborted; the session is unchanged`);
}

/** A member of a thrown value, whatever the value is (undefined for a primitive or nullish one). */
function member(thrown: unknown, key: string): unknown {
  return thrown !== null && (typeof thrown === 'object' || typeof thrown === 'function')
    ? (thrown as Record<string, unknown>)[key]
    : undefined;
}

/**
 * The message of a thrown value: its `message` when that is a string, else the value as text.
 * @internal
 */
export function messageOf(thrown: unknown, fallback = 'unknown error'): string {
  const message = member(thrown, 'message');
  if (typeof message === 'string') return message;
  return thrown === undefined || thrown === null ? fallback : String(thrown);
}

/**
 * The HTTP status a thrown value reports (`status`, or `statusCode` as some clients name it).
 * @internal
 */
export function statusOf(thrown: unknown): number | undefined {
  const status = member(thrown, 'status');
  if (typeof status === 'number' && Number.isFinite(status)) return status;
  const statusCode = member(thrown, 'statusCode');
  if (typeof statusCode === 'number' && Number.isFinite(statusCode)) return statusCode;
  return undefined;
}

/**
 * A thrown value (anything: an Error, a string, undefined) as a coded Error with `message`,
 * keeping the value as `cause` and its HTTP status as `status`.
 * @internal
 */
export function wrapError(code: ErrorCode, message: string, thrown: unknown): CtxfoldError {
  return codedError(code, message, { cause: thrown, status: statusOf(thrown) });
}

/** A wasm object of the glue: it can be released once. @internal */
export interface Freeable {
  free(): void;
}

/**
 * Wasm objects released by `free()`: a later call through one of them throws `E_FREED`
 * (`live`) instead of the glue's uncoded "null pointer passed to rust".
 */
const freed = new WeakSet<Freeable>();

/** Releases a wasm object and remembers that it is gone. @internal */
export function release(raw: Freeable): void {
  if (freed.has(raw)) return;
  freed.add(raw);
  raw.free();
}

/** `raw`, unless it was released: then `E_FREED` naming `what` ("session", "plan"). @internal */
export function live<T extends Freeable>(raw: T, what: string): T {
  if (freed.has(raw)) {
    throw codedError('E_FREED', `this ${what} was freed (free() was called); it cannot be used any more`);
  }
  return raw;
}
