// Session.fromReader (issue 42 item 1): the host writes the file straight into the module's
// memory and the session takes those bytes over; what it opens is what fromJsonl opens.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session, wasmMemoryBytes } from 'ctxfold';
import { generatedSession } from './support/generated.mjs';

const bytes = () => generatedSession('transcript-2k.jsonl', ['--entries', '2000', '--seed', '9']);

/** A reader that copies `source` into the view and returns how much it wrote. */
const copying = (source) => (view) => {
  view.set(source);
  return source.length;
};

test('fromReader opens the same session as fromJsonl, byte for byte', () => {
  const file = bytes();
  const a = Session.fromJsonl(file);
  const b = Session.fromReader(file.length, copying(file));
  assert.deepEqual(Buffer.from(b.toBytes()), Buffer.from(a.toBytes()));
  assert.equal(b.size, a.size);
  assert.equal(b.leafId, a.leafId);
  assert.deepEqual(b.contextTokens(), a.contextTokens());
  assert.deepEqual(b.toLlmMessages(), a.toLlmMessages());
  // Undefined from read: every byte of the view was written.
  const c = Session.fromReader(file.length, (view) => {
    view.set(file);
  });
  assert.deepEqual(Buffer.from(c.toBytes()), Buffer.from(file));
  for (const s of [a, b, c]) s.free();
});

test('fromReader loads only the bytes read said it wrote', () => {
  const file = bytes();
  const s = Session.fromReader(file.length + 4096, copying(file));
  assert.deepEqual(Buffer.from(s.toBytes()), Buffer.from(file));
  s.free();
  // Options reach the loader as with fromJsonl.
  const migrated = Buffer.from('{"type":"session","id":"old","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n');
  const d = Session.fromReader(migrated.length, copying(migrated), { ids: 'deterministic' });
  assert.deepEqual(d.version, { current: 3, onDisk: 1 });
  d.free();
});

test('fromReader refuses bad arguments and a stale view, and the next load works', () => {
  const file = bytes();
  const code = (e) => e.code === 'E_INVALID_ARGUMENT';
  assert.throws(() => Session.fromReader(-1, copying(file)), code);
  assert.throws(() => Session.fromReader(1.5, copying(file)), code);
  assert.throws(() => Session.fromReader(10, 'read'), code);
  assert.throws(() => Session.fromReader(10, () => 11), code);
  assert.throws(() => Session.fromReader(10, () => -1), code);
  // What read throws reaches the caller.
  assert.throws(
    () =>
      Session.fromReader(10, () => {
        throw new Error('disk gone');
      }),
    /disk gone/,
  );
  // A read that makes the module's memory grow leaves its view over the old memory.
  assert.throws(
    () =>
      Session.fromReader(file.length, (view) => {
        try {
          Session.fromJsonl(new Uint8Array(wasmMemoryBytes()));
        } catch {
          // not a session; the memory grew to hold it all the same
        }
        view.set(file);
        return file.length;
      }),
    code,
  );
  // Not a session file: the loader's own error.
  assert.throws(
    () => Session.fromReader(3, copying(Buffer.from('abc'))),
    (e) => e.code === 'E_NOT_A_SESSION',
  );
  const s = Session.fromReader(file.length, copying(file));
  assert.equal(s.size, Session.fromJsonl(file).size);
  s.free();
});
