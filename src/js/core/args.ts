// Argument checks of the public API, shared by every module. Each check returns the value in
// the form the wasm core takes (bytes, a string, JSON text, a number) or throws
// `E_INVALID_ARGUMENT` with a message that names the argument: `what` is how the message
// names it ("input", "a label", "`sessionId`"). Optional values treat `undefined` and `null`
// alike: absent.
import { type ErrorCode, invalidArgument, messageOf, wrapError } from './errors.js';

const encoder = new TextEncoder();

/** A non-null object that is not an array. @internal */
export function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** `undefined` or `null`. */
function absent(value: unknown): value is undefined | null {
  return value === undefined || value === null;
}

/** The bytes of an ArrayBuffer or a view of one (no copy), or undefined. */
function viewBytes(input: unknown): Uint8Array | undefined {
  if (input instanceof Uint8Array) return input;
  if (input instanceof ArrayBuffer) return new Uint8Array(input);
  if (ArrayBuffer.isView(input)) {
    return new Uint8Array(input.buffer, input.byteOffset, input.byteLength);
  }
  return undefined;
}

/** Bytes given as a string (encoded as UTF-8), a Uint8Array, an ArrayBuffer or a view. @internal */
export function textOrBytes(input: unknown, what: string): Uint8Array {
  if (typeof input === 'string') return encoder.encode(input);
  const out = viewBytes(input);
  if (out === undefined) {
    throw invalidArgument(`${what} must be a string, Uint8Array or ArrayBuffer`);
  }
  return out;
}

/** Bytes given as a Uint8Array, an ArrayBuffer or a view (no strings). @internal */
export function bytes(input: unknown, what: string): Uint8Array {
  const out = viewBytes(input);
  if (out === undefined) {
    throw invalidArgument(`${what} must be a Uint8Array, ArrayBuffer or typed array view`);
  }
  return out;
}

/** A string, required: `E_INVALID_ARGUMENT` otherwise. @internal */
export function text(value: unknown, what: string): string {
  if (typeof value !== 'string') throw invalidArgument(`${what} must be a string`);
  return value;
}

/** A string, or undefined when absent. @internal */
export function optionalText(value: unknown, what: string): string | undefined {
  return absent(value) ? undefined : text(value, what);
}

/** A non-empty string: an entry id, an entry type. @internal */
export function nonEmptyText(value: unknown, what = 'id'): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw invalidArgument(`${what} must be a non-empty string`);
  }
  return value;
}

/** An object (not an array). @internal */
export function object(value: unknown, what: string): Record<string, unknown> {
  if (!isObject(value)) throw invalidArgument(`${what} must be an object`);
  return value;
}

/** An options or settings object as JSON text, or undefined when absent. @internal */
export function optionsJson(value: unknown, what = 'options'): string | undefined {
  return absent(value) ? undefined : JSON.stringify(object(value, what));
}

/** Any value as JSON text, or undefined when absent. @internal */
export function optionalJson(value: unknown): string | undefined {
  return absent(value) ? undefined : JSON.stringify(value);
}

/**
 * `JSON.stringify` for data that becomes session content: a BigInt (a tool argument beyond
 * 2^53, say) is kept exact as a quoted decimal string (spec: compaction §5.1) instead of
 * making `JSON.stringify` throw.
 * @internal
 */
export function toJson(value: unknown, code: ErrorCode = 'E_INVALID_ARGUMENT'): string {
  // Without a replacer first: a replacer makes JSON.stringify call back into JS for every
  // key, several times slower on a large message. Only a BigInt (or a cycle, which throws
  // again) lands in the second pass.
  try {
    return JSON.stringify(value);
  } catch (e) {
    if (!(e instanceof TypeError)) throw wrapError(code, `cannot be written as JSON: ${messageOf(e)}`, e);
  }
  try {
    return JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? v.toString() : v));
  } catch (e) {
    // A cycle (or a throwing toJSON): not data a session can hold. `code` says what it was
    // (E_INVALID_MESSAGE for a message).
    throw wrapError(code, `cannot be written as JSON: ${messageOf(e)}`, e);
  }
}

/**
 * `toJson` as UTF-8 bytes: a Uint8Array crosses into wasm as one copy, where a string is
 * re-encoded by the glue character by character.
 * @internal
 */
export function toJsonBytes(value: unknown, code?: ErrorCode): Uint8Array {
  return encoder.encode(toJson(value, code));
}

/**
 * A runtime's own UTF-8 writer (see `useUtf8Writer`): Node.js's Buffer functions.
 * @internal
 */
export interface Utf8Writer {
  alloc(n: number): Uint8Array;
  write(buffer: Uint8Array, string: string, at: number): number;
  length(string: string): number;
}

/** The buffer a released JsonlWriter left for the next one. */
let spare: WeakRef<Uint8Array> | null = null;

/** The runtime's own UTF-8 writer (`useUtf8Writer`), or null: TextEncoder. */
let utf8: Utf8Writer | null = null;

/** A JsonlWriter buffer of `n` bytes, from the runtime's writer when there is one. */
const alloc = (n: number): Uint8Array => (utf8 === null ? new Uint8Array(n) : utf8.alloc(n));

/**
 * Lets JsonlWriter encode with the runtime's UTF-8 writer: `alloc(n)` makes a byte buffer
 * (need not be zeroed: only written bytes are read), `write(buffer, string, at)` writes all of
 * `string` at `at` and returns the bytes written, `length(string)` counts them. The Node.js
 * entry passes Buffer's, which Node.js 22 and later run with SIMD: about seven times
 * TextEncoder.encodeInto's speed on Latin-1 text (the same speed on Node.js 20).
 * @internal
 */
export function useUtf8Writer(writer: Utf8Writer): void {
  utf8 = writer;
}

/**
 * A JSONL file written line by line as UTF-8 into one growing buffer. Each line is encoded as
 * it is added, so no line's text outlives its encoding and the file's text is never held
 * whole: a join and one encode of a 10 MB history made two more copies of it (12 ms against
 * 6 ms for the encoding alone).
 * @internal
 */
export class JsonlWriter {
  /** The buffer (null once released). */
  #buf: Uint8Array;
  #used = 0;
  /** Lines added. */
  count = 0;

  /** `expected`: about how many UTF-16 units the lines will hold (the buffer grows past it). */
  constructor(expected = 0) {
    // UTF-8 is longer than UTF-16 only for non-ASCII text: an eighth more to start with.
    const want = Math.max(1 << 16, expected + (expected >> 3));
    const kept = spare?.deref();
    spare = null;
    this.#buf = kept !== undefined && kept.length >= want ? kept : alloc(want);
  }

  /** Appends `line` (no newline in it) and a newline. */
  add(line: string): void {
    if (utf8 !== null) {
      // Three bytes at most per UTF-16 unit; the exact length only when that may not fit.
      const free = this.#buf.length - this.#used - 1;
      if (line.length * 3 > free) {
        const need = utf8.length(line);
        if (need > free) this.#grow(need + 1);
      }
      this.#used += utf8.write(this.#buf, line, this.#used);
    } else {
      let rest = line;
      for (;;) {
        const { read, written } = encoder.encodeInto(rest, this.#buf.subarray(this.#used));
        this.#used += written;
        if (read === rest.length) break;
        rest = rest.slice(read);
        this.#grow(rest.length * 3);
      }
      if (this.#used === this.#buf.length) this.#grow(1);
    }
    this.#buf[this.#used++] = 10;
    this.count++;
  }

  /** The file's bytes so far (a view of the buffer, valid until `release`). */
  bytes(): Uint8Array {
    return this.#buf.subarray(0, this.#used);
  }

  /**
   * Done with the bytes: the buffer is kept (weakly, so a collection may take it) for the next
   * writer. A fresh 10 MB buffer per file costs its zeroing and page faults, as much as half
   * the encoding itself.
   */
  release(): void {
    spare = new WeakRef(this.#buf);
    // Dropped here so the writer holds no strong reference; a use after `release` is a bug.
    this.#buf = new Uint8Array(0);
  }

  #grow(need: number): void {
    const out = alloc(Math.max(this.#buf.length * 2, this.#used + need));
    out.set(this.#buf.subarray(0, this.#used));
    this.#buf = out;
  }
}

/** The `now` option in ms since the epoch; `Date.now()` when absent. @internal */
export function nowOf(options?: { now?: unknown } | null): number {
  const now = options?.now ?? Date.now();
  if (typeof now !== 'number' || !Number.isFinite(now)) {
    throw invalidArgument('`now` must be a finite number of milliseconds');
  }
  return now;
}

/** An integer of at least `min`: "`what` must be a whole number of `unit`". @internal */
export function wholeNumber(value: unknown, what: string, unit: string, min = 0): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min) {
    throw invalidArgument(`${what} must be a whole number of ${unit}`);
  }
  return value;
}

/** A token count option: a finite non-negative number, or undefined when absent. @internal */
export function optionalTokens(value: unknown, what: string): number | undefined {
  if (absent(value)) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) {
    throw invalidArgument(`\`${what}\` must be a non-negative number of tokens`);
  }
  return value;
}

/** A token count that must be given. @internal */
export function requiredTokens(value: unknown, what: string): number {
  const t = optionalTokens(value, what);
  if (t === undefined) throw invalidArgument(`\`${what}\` is required (a number of tokens)`);
  return t;
}

/**
 * A time option as ms since the epoch: given as ms, a Date, or an ISO string (as session
 * entries carry); undefined when absent.
 * @internal
 */
export function optionalTime(value: unknown, what: string): number | undefined {
  if (absent(value)) return undefined;
  const ms = value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : value;
  if (typeof ms !== 'number' || !Number.isFinite(ms)) {
    throw invalidArgument(`\`${what}\` must be a time: milliseconds, a Date or an ISO string`);
  }
  return ms;
}
