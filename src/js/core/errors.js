// The errors of the JS API. Every Error ctxfold throws carries a stable `code` (the `ErrorCode`
// union of index.d.ts); the ones made here also keep what caused them: `cause` is the value a
// callback threw (or the Error it was built from), `status` the HTTP status it reported.

/**
 * A coded Error. `cause` is set only when given (so `'cause' in err` says whether there is
 * one), `status` only when it is a finite number.
 */
export function codedError(code, message, { cause, status } = {}) {
  const err = cause === undefined ? new Error(message) : new Error(message, { cause });
  err.code = code;
  if (Number.isFinite(status)) err.status = status;
  return err;
}

/** Misuse of the API by the caller: a wrong type, a missing value. */
export function invalidArgument(message) {
  return codedError('E_INVALID_ARGUMENT', message);
}

/**
 * The error of an aborted operation, `E_ABORTED`: `Aborted: …`, or `Compaction aborted: …`
 * when `operation` is `'Compaction'`.
 */
export function abortError(operation) {
  const what = operation === undefined ? 'Aborted' : `${operation} aborted`;
  return codedError('E_ABORTED', `${what}: the signal was aborted; the session is unchanged`);
}

/** The message of a thrown value: its `message` when that is a string, else the value as text. */
export function messageOf(thrown, fallback = 'unknown error') {
  if (typeof thrown?.message === 'string') return thrown.message;
  return thrown === undefined || thrown === null ? fallback : String(thrown);
}

/** The HTTP status a thrown value reports (`status`, or `statusCode` as some clients name it). */
export function statusOf(thrown) {
  if (Number.isFinite(thrown?.status)) return thrown.status;
  if (Number.isFinite(thrown?.statusCode)) return thrown.statusCode;
  return undefined;
}

/**
 * A thrown value (anything: an Error, a string, undefined) as a coded Error with `message`,
 * keeping the value as `cause` and its HTTP status as `status`.
 */
export function wrapError(code, message, thrown) {
  return codedError(code, message, { cause: thrown, status: statusOf(thrown) });
}

/**
 * Wasm objects released by `free()`: a later call through one of them throws `E_FREED`
 * (`live`) instead of the glue's uncoded "null pointer passed to rust".
 */
const freed = new WeakSet();

/** Releases a wasm object and remembers that it is gone. */
export function release(raw) {
  if (freed.has(raw)) return;
  freed.add(raw);
  raw.free();
}

/** `raw`, unless it was released: then `E_FREED` naming `what` ("session", "plan"). */
export function live(raw, what) {
  if (freed.has(raw)) {
    throw codedError('E_FREED', `this ${what} was freed (free() was called); it cannot be used any more`);
  }
  return raw;
}
