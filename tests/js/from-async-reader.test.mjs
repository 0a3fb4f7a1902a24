// Session.fromAsyncReader (issue 42): the host reads the file a window at a time straight into
// the module's memory, the lines of each window read while the next is fetched; what it opens
// is what fromJsonl opens, whatever the windows, the reads' sizes and what else runs meanwhile.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { Session } from 'ctxfold';
import { generatedSession } from './support/generated.mjs';
import { freeGrown, growMemory } from './support/memory.mjs';

const bytes = () => generatedSession('transcript-2k.jsonl', ['--entries', '2000', '--seed', '9']);
const invalid = (e) => e.code === 'E_INVALID_ARGUMENT';

/** A reader over `source` that writes at most `most` bytes a call (all it is given when 0). */
const copying =
  (source, most = 0, calls = []) =>
  async (view, position) => {
    calls.push([position, view.byteLength]);
    await null;
    const n = Math.min(view.byteLength, source.length - position, most || Number.POSITIVE_INFINITY);
    view.set(source.subarray(position, position + n));
    return n;
  };

/** The session's observable state, for comparing two loads of one file. */
function same(a, b) {
  assert.deepEqual(Buffer.from(b.toBytes()), Buffer.from(a.toBytes()));
  assert.equal(b.size, a.size);
  assert.equal(b.leafId, a.leafId);
  assert.deepEqual(b.warnings, a.warnings);
  assert.deepEqual(b.contextTokens(), a.contextTokens());
  assert.deepEqual(b.toLlmMessages(), a.toLlmMessages());
}

test('fromAsyncReader opens what fromJsonl opens, with a file handle and any window', async () => {
  const file = bytes();
  const dir = mkdtempSync(path.join(tmpdir(), 'ctxfold-async-'));
  const name = path.join(dir, 'session.jsonl');
  writeFileSync(name, file);
  const a = Session.fromJsonl(file);
  for (const chunkSize of [undefined, 1 << 16, 4097]) {
    const handle = await open(name, 'r');
    const { size } = await handle.stat();
    const b = await Session.fromAsyncReader(
      size,
      (view, position) => handle.read(view, 0, view.byteLength, position).then((r) => r.bytesRead),
      chunkSize === undefined ? undefined : { chunkSize },
    );
    await handle.close();
    same(a, b);
    b.free();
  }
  a.free();
});

test('fromAsyncReader: short reads, synchronous reads, undefined counts, an early end', async () => {
  const file = bytes();
  const a = Session.fromJsonl(file);
  // A read that writes less than its view: the next window starts where it stopped.
  const calls = [];
  const b = await Session.fromAsyncReader(file.length, copying(file, 10_007, calls), { chunkSize: 65_536 });
  same(a, b);
  assert.ok(calls.length >= Math.ceil(file.length / 10_007), `${calls.length} reads`);
  for (let i = 1; i < calls.length; i++) {
    assert.equal(calls[i][0], Math.min(file.length, calls[i - 1][0] + Math.min(10_007, calls[i - 1][1])));
  }
  // A read that answers at once, and one that says nothing (the whole view written).
  const c = await Session.fromAsyncReader(file.length, (view, position) => {
    view.set(file.subarray(position, position + view.byteLength));
    return view.byteLength;
  });
  same(a, c);
  const d = await Session.fromAsyncReader(
    file.length,
    async (view, position) => {
      view.set(file.subarray(position, position + view.byteLength));
    },
    { chunkSize: 100_000 },
  );
  same(a, d);
  // A file shorter than the size given: 0 ends it, and what was read is the file.
  const e = await Session.fromAsyncReader(file.length + 5000, copying(file), { chunkSize: 300_000 });
  same(a, e);
  // Options reach the loader as with fromJsonl.
  const migrated = Buffer.from('{"type":"session","id":"old","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n');
  const f = await Session.fromAsyncReader(migrated.length, copying(migrated), { ids: 'deterministic' });
  assert.deepEqual(f.version, { current: 3, onDisk: 1 });
  // An empty file is no session.
  await assert.rejects(Session.fromAsyncReader(0, copying(file)), (err) => err.code === 'E_NOT_A_SESSION');
  for (const s of [a, b, c, d, e, f]) s.free();
});

test('fromAsyncReader reads a window again when the module memory grew during its read', async () => {
  const file = bytes();
  const a = Session.fromJsonl(file);
  // The first read of each window fills the view, then makes the memory grow: that window is
  // read once more into a fresh view.
  let grown = 0;
  const seen = new Map();
  const b = await Session.fromAsyncReader(
    file.length,
    async (view, position) => {
      view.set(file.subarray(position, position + view.byteLength));
      seen.set(position, (seen.get(position) ?? 0) + 1);
      if (seen.get(position) === 1 && grown < 3) {
        grown++;
        growMemory();
      }
      return view.byteLength;
    },
    { chunkSize: 1 << 20 },
  );
  same(a, b);
  assert.equal(grown, 3);
  assert.equal([...seen.values()].filter((n) => n === 2).length, 3, 'three windows read twice');
  // A reader in JavaScript that writes after the memory grew writes into a stale view (its
  // writes go nowhere): the window read again is what the session holds.
  let once = true;
  const c = await Session.fromAsyncReader(
    file.length,
    async (view, position) => {
      if (once) {
        once = false;
        growMemory();
        for (let i = 0; i < view.length; i++) view[i] = file[position + i];
        return view.length;
      }
      view.set(file.subarray(position, position + view.byteLength));
      return view.byteLength;
    },
    { chunkSize: 1 << 20 },
  );
  same(a, c);
  // One that writes with `set` after the memory grew throws (the view's buffer is detached):
  // that window is read again too, and the error goes nowhere.
  let first = true;
  const e = await Session.fromAsyncReader(
    file.length,
    async (view, position) => {
      if (first) {
        first = false;
        growMemory();
      }
      view.set(file.subarray(position, position + view.byteLength));
      return view.byteLength;
    },
    { chunkSize: 1 << 20 },
  );
  same(a, e);
  e.free();
  // Memory that grows during every read of a window: refused, and the next load works.
  await assert.rejects(
    Session.fromAsyncReader(file.length, async (view, position) => {
      view.set(file.subarray(position, position + view.byteLength));
      growMemory();
      return view.byteLength;
    }),
    (err) => invalid(err) && /grew/.test(err.message),
  );
  const d = await Session.fromAsyncReader(file.length, copying(file));
  same(a, d);
  for (const s of [a, b, c, d]) s.free();
  freeGrown();
});

test('fromAsyncReader: loads in flight together and other calls meanwhile', async () => {
  const file = bytes();
  const other = generatedSession('transcript-2k-b.jsonl', ['--entries', '1500', '--seed', '4']);
  const [x, y] = [Session.fromJsonl(file), Session.fromJsonl(other)];
  const slow = (source) => async (view, position) => {
    await new Promise((resolve) => setTimeout(resolve, 1));
    // Another session's work while the read is in flight.
    x.contextTokens();
    const n = Math.min(view.byteLength, source.length - position);
    view.set(source.subarray(position, position + n));
    return n;
  };
  const [a, b] = await Promise.all([
    Session.fromAsyncReader(file.length, slow(file), { chunkSize: 300_000 }),
    Session.fromAsyncReader(other.length, slow(other), { chunkSize: 200_000 }),
  ]);
  same(x, a);
  same(y, b);
  for (const s of [a, b, x, y]) s.free();
});

test('fromAsyncReader refuses bad arguments and counts, passes the read’s error, then works', async () => {
  const file = bytes();
  await assert.rejects(Session.fromAsyncReader(-1, copying(file)), invalid);
  await assert.rejects(Session.fromAsyncReader(1.5, copying(file)), invalid);
  await assert.rejects(Session.fromAsyncReader(10, 'read'), invalid);
  await assert.rejects(Session.fromAsyncReader(10, copying(file), { chunkSize: 0 }), invalid);
  await assert.rejects(Session.fromAsyncReader(10, copying(file), { chunkSize: 2.5 }), invalid);
  await assert.rejects(
    Session.fromAsyncReader(10, async () => 11),
    invalid,
  );
  await assert.rejects(
    Session.fromAsyncReader(10, () => -1),
    invalid,
  );
  await assert.rejects(
    Session.fromAsyncReader(10, async () => 'ten'),
    invalid,
  );
  await assert.rejects(
    Session.fromAsyncReader(
      file.length,
      async (view, position) => {
        if (position > 0) throw new Error('disk gone');
        view.set(file.subarray(0, view.byteLength));
        return view.byteLength;
      },
      { chunkSize: 4096 },
    ),
    /disk gone/,
  );
  await assert.rejects(
    Session.fromAsyncReader(3, copying(Buffer.from('abc'))),
    (err) => err.code === 'E_NOT_A_SESSION',
  );
  const s = await Session.fromAsyncReader(file.length, copying(file));
  same(Session.fromJsonl(file), s);
  s.free();
});

test('an abort stops fromAsyncReader at once and asks for no more reads', async () => {
  const file = bytes();
  const aborted = (e) => e.code === 'E_ABORTED';
  const before = new AbortController();
  before.abort();
  let reads = 0;
  await assert.rejects(
    Session.fromAsyncReader(file.length, () => reads++, { signal: before.signal }),
    aborted,
  );
  assert.equal(reads, 0);
  // The second read never ends: the abort rejects the load without it.
  const controller = new AbortController();
  const positions = [];
  let finishSecond;
  const load = Session.fromAsyncReader(
    file.length,
    (view, position) => {
      positions.push(position);
      if (positions.length === 1) {
        view.set(file.subarray(0, view.byteLength));
        return view.byteLength;
      }
      return new Promise((resolve) => {
        finishSecond = () => {
          view.set(file.subarray(position, position + view.byteLength));
          resolve(view.byteLength);
        };
      });
    },
    { chunkSize: 1 << 20, signal: controller.signal },
  );
  setTimeout(() => controller.abort(), 20);
  await assert.rejects(load, aborted);
  assert.equal(positions.length, 2, 'no read after the abort');
  // The read in flight ends later: its buffer is freed then, and loads go on.
  finishSecond();
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(positions.length, 2);
  const s = await Session.fromAsyncReader(file.length, copying(file), { signal: new AbortController().signal });
  same(Session.fromJsonl(file), s);
  s.free();
  await assert.rejects(Session.fromAsyncReader(file.length, copying(file), { signal: 'stop' }), invalid);
});
