// What every store of this folder shares: the check of a `SessionChanges` value before anything is
// written, the check that it starts where the stored file ends, and the line model (the file is
// its lines, each followed by "\n"; a line keeps any "\r" it ends with, so "\r\n" files come back
// byte for byte). The stores only apply changes: which lines changed is the journal's business.
import { isObject, nonEmptyText } from '../core/args.js';
import { invalidArgument } from '../core/errors.js';
import type { SessionChanges } from './types.js';

const encoder = new TextEncoder();

/** A session id as the stores take it: a non-empty string. @internal */
export function sessionId(id: unknown): string {
  return nonEmptyText(id, 'the session id');
}

/** Whether `text` has a UTF-16 surrogate without its other half (it has no UTF-8 form). */
function loneSurrogate(text: string): boolean {
  // ES2024's native check where the runtime has it (Node.js 20, current browsers, workerd).
  const native = (text as { isWellFormed?: () => boolean }).isWellFormed;
  if (typeof native === 'function') return !native.call(text);
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0xd800 || unit > 0xdfff) continue;
    const next = text.charCodeAt(i + 1);
    if (unit > 0xdbff || !(next >= 0xdc00 && next <= 0xdfff)) return true;
    i++;
  }
  return false;
}

/**
 * A line's text: a string without a line break ("\n" would split it into two lines) and
 * without a lone surrogate (a file's line is UTF-8 text; a store would write U+FFFD instead).
 */
function lineText(value: unknown, what: string): string {
  if (typeof value !== 'string') throw invalidArgument(`${what} must be a string`);
  if (value.includes('\n')) throw invalidArgument(`${what} holds a line break`);
  if (loneSurrogate(value)) throw invalidArgument(`${what} holds a lone UTF-16 surrogate (not UTF-8 text)`);
  return value;
}

/**
 * Checks the shape of `changes` (what `session.changes()` returns) before a store writes any of
 * it: a wrong value is `E_INVALID_ARGUMENT` and the store is left as it was. @internal
 */
export function checkChanges(changes: unknown): SessionChanges {
  if (!isObject(changes)) throw invalidArgument('changes must be an object (from session.changes())');
  const { since, mark, reset, rewritten, appended, lineCount } = changes;
  if (since !== null && typeof since !== 'string') throw invalidArgument('changes.since must be a string or null');
  if (typeof mark !== 'string') throw invalidArgument('changes.mark must be a string');
  if (typeof reset !== 'boolean') throw invalidArgument('changes.reset must be a boolean');
  if (!Array.isArray(rewritten)) throw invalidArgument('changes.rewritten must be an array');
  if (!Array.isArray(appended)) throw invalidArgument('changes.appended must be an array');
  if (typeof lineCount !== 'number' || !Number.isSafeInteger(lineCount) || lineCount < 0) {
    throw invalidArgument('changes.lineCount must be a whole number');
  }
  appended.forEach((line, i) => {
    lineText(line, `changes.appended[${i}]`);
  });
  let previous = -1;
  rewritten.forEach((row: unknown, i) => {
    if (!isObject(row)) throw invalidArgument(`changes.rewritten[${i}] must be an object`);
    const { index } = row;
    if (typeof index !== 'number' || !Number.isSafeInteger(index) || index <= previous) {
      throw invalidArgument(`changes.rewritten[${i}].index must be a whole number above the one before`);
    }
    lineText(row.text, `changes.rewritten[${i}].text`);
    previous = index;
  });
  if (reset && rewritten.length > 0)
    throw invalidArgument('changes.rewritten must be empty when changes.reset is true');
  if (reset && appended.length !== lineCount) {
    throw invalidArgument(`changes.lineCount (${lineCount}) must be the number of appended lines when reset`);
  }
  return changes as unknown as SessionChanges;
}

/**
 * Checks that `changes` (not a reset) start where the stored file ends: `stored` lines (or none:
 * `null`), as many as the changes had before their appends, and every rewritten line among them.
 * A mismatch (another writer saved in between, or changes meant for another store) is
 * `E_INVALID_ARGUMENT` and nothing is written; a reset fits whatever is stored. @internal
 */
export function checkFits(id: string, stored: number | null, changes: SessionChanges): void {
  if (changes.reset) return;
  const before = changes.lineCount - changes.appended.length;
  if (stored === null) {
    throw invalidArgument(
      `session ${JSON.stringify(id)} is not in the store: its first save must be a reset (changes() without a mark)`,
    );
  }
  if (stored !== before) {
    throw invalidArgument(
      `the changes start from ${before} lines but the store holds ${stored} for session ${JSON.stringify(id)} ` +
        '(another writer saved in between, or the changes were meant for another store); save a reset',
    );
  }
  const last = changes.rewritten.at(-1);
  if (last !== undefined && last.index >= before) {
    throw invalidArgument(`changes.rewritten names line ${last.index} of a file of ${before} lines`);
  }
}

/** The bytes of a file of `lines`: each line followed by "\n". @internal */
export function fileBytes(lines: readonly string[]): Uint8Array {
  return encoder.encode(lines.length === 0 ? '' : `${lines.join('\n')}\n`);
}

/** UTF-8 bytes of `text`. @internal */
export function utf8(text: string): Uint8Array {
  return encoder.encode(text);
}
