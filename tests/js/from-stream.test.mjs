// Session.fromStream (issue 42 item 4): a session file read from a ReadableStream, a fetch
// Response or an async iterable, each chunk written into a buffer of the module as it arrives;
// what it opens is what fromJsonl opens, whatever the chunks, and a load that gives up leaves
// nothing behind that the next one would see.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createReadStream, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { Session } from 'ctxfold';
import { generatedSession } from './support/generated.mjs';
import { testsDir } from './support/project.mjs';

const bytes = () => generatedSession('transcript-2k.jsonl', ['--entries', '2000', '--seed', '9']);

/** A small deterministic generator (mulberry32). */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** `file` cut into chunks of random lengths up to `max` (some empty), each its own copy. */
function chunksOf(file, rand, max) {
  const out = [];
  for (let at = 0; at < file.length; ) {
    const n = Math.min(file.length - at, Math.floor(rand() * (max + 1)));
    out.push(file.slice(at, at + n));
    at += n;
  }
  return out;
}

/** A ReadableStream giving `chunks`, one per pull, with a pause between some of them. */
function streamOf(chunks, { pause = false } = {}) {
  let i = 0;
  return new ReadableStream({
    async pull(controller) {
      if (pause && i % 97 === 3) await new Promise((r) => setTimeout(r, 1));
      if (i < chunks.length) controller.enqueue(chunks[i++]);
      else controller.close();
    },
  });
}

const same = (s, file) => assert.deepEqual(Buffer.from(s.toBytes()), Buffer.from(file));

test('fromStream opens what fromJsonl opens, for any chunking, size known or not', async () => {
  const full = bytes();
  // Chunks of a few bytes over the first lines only (millions of chunks would take minutes).
  const head = full.subarray(0, full.indexOf(10, 40_000) + 1);
  const rand = random(42);
  for (let round = 0; round < 24; round++) {
    const max = [1, 7, 4096, 65536, 1 << 20][round % 5];
    const file = max < 100 ? head : full;
    const whole = Session.fromJsonl(file);
    const chunks = round === 0 ? [file] : chunksOf(file, rand, max);
    // The size as the host knows it: right, unknown, too small, too large (a hint only).
    const size = [file.length, undefined, Math.floor(file.length / 3), file.length + 12345][round % 4];
    const s = await Session.fromStream(streamOf(chunks, { pause: round % 3 === 0 }), { size });
    same(s, file);
    assert.equal(s.size, whole.size);
    assert.equal(s.leafId, whole.leafId);
    assert.deepEqual(s.contextTokens(), whole.contextTokens());
    s.free();
    whole.free();
  }
});

test('fromStream reads a fetch Response (its Content-Length as the size) and an async iterable', async () => {
  const file = bytes();
  const rand = random(7);
  const announced = new Response(streamOf(chunksOf(file, rand, 70_000)), {
    headers: { 'content-length': String(file.length) },
  });
  const a = await Session.fromStream(announced);
  same(a, file);
  // A wrong Content-Length is a hint only: the file is what the body gives.
  const wrong = new Response(streamOf(chunksOf(file, rand, 70_000)), { headers: { 'content-length': '10' } });
  const b = await Session.fromStream(wrong);
  same(b, file);
  // A Node.js file stream (Buffers, an async iterable), with the size from the caller.
  const where = path.join(tmpdir(), `ctxfold-from-stream-${process.pid}.jsonl`);
  writeFileSync(where, file);
  const c = await Session.fromStream(createReadStream(where, { highWaterMark: 10_000 }), { size: file.length });
  same(c, file);
  // Options reach the loader as with fromJsonl.
  const old = Buffer.from('{"type":"session","id":"old","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n');
  const d = await Session.fromStream(new Response(old), { ids: 'deterministic' });
  assert.deepEqual(d.version, { current: 3, onDisk: 1 });
  for (const s of [a, b, c, d]) s.free();
});

test('two streams opened at once, interleaved, each give their own file', async () => {
  const file = bytes();
  const other = Buffer.concat([file.subarray(0, file.indexOf(10) + 1)]);
  const rand = random(3);
  const [a, b] = await Promise.all([
    Session.fromStream(streamOf(chunksOf(file, rand, 30_000), { pause: true })),
    Session.fromStream(streamOf(chunksOf(other, rand, 5), { pause: true })),
  ]);
  same(a, file);
  same(b, other);
  // And a synchronous open in between does not disturb a stream in flight.
  let release;
  const gate = new Promise((r) => {
    release = r;
  });
  const half = file.length >> 1;
  const slow = new ReadableStream({
    async start(controller) {
      controller.enqueue(file.slice(0, half));
      await gate;
      controller.enqueue(file.slice(half));
      controller.close();
    },
  });
  const pending = Session.fromStream(slow);
  await new Promise((r) => setTimeout(r, 5));
  const c = Session.fromJsonl(file);
  release();
  const d = await pending;
  same(d, file);
  for (const s of [a, b, c, d]) s.free();
});

test('fromStream refuses what is not a byte source, cancels the stream on a bad chunk, and rejects with the stream error', async () => {
  const file = bytes();
  const code = (name) => (e) => e.code === name;
  for (const bad of [null, 42, 'text', {}, [file]]) {
    await assert.rejects(Session.fromStream(bad), code('E_INVALID_ARGUMENT'));
  }
  for (const size of [-1, 1.5, Number.NaN]) {
    await assert.rejects(Session.fromStream(streamOf([file]), { size }), code('E_INVALID_ARGUMENT'));
  }
  let cancelled;
  const texty = new ReadableStream({
    start(controller) {
      controller.enqueue(file.slice(0, 100));
      controller.enqueue('not bytes');
    },
    cancel(reason) {
      cancelled = reason ?? true;
    },
  });
  await assert.rejects(Session.fromStream(texty), code('E_INVALID_ARGUMENT'));
  assert.ok(cancelled, 'the stream was not cancelled');
  const failing = new ReadableStream({
    start(controller) {
      controller.enqueue(file.slice(0, 100));
      controller.error(new Error('connection reset'));
    },
  });
  await assert.rejects(Session.fromStream(failing), /connection reset/);
  // Not a session file, and an empty one: the loader's own error.
  await assert.rejects(Session.fromStream(streamOf([Buffer.from('abc\n')])), code('E_NOT_A_SESSION'));
  await assert.rejects(Session.fromStream(new Response(null)), code('E_NOT_A_SESSION'));
  // After all of that, the next load is whole.
  const s = await Session.fromStream(streamOf(chunksOf(file, random(9), 50_000)));
  same(s, file);
  s.free();
});

test('a stream of unknown length grows its buffer in place: the module holds about what a known size needs', () => {
  const where = path.join(tmpdir(), `ctxfold-from-stream-mem-${process.pid}.jsonl`);
  writeFileSync(where, bytes());
  // Each in a fresh process: the module's memory never shrinks.
  const memory = (sized) => {
    const child = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { createReadStream, statSync } from 'node:fs';
         import { Session, wasmMemoryBytes } from 'ctxfold';
         const file = process.argv[1];
         const options = process.argv[2] === 'sized' ? { size: statSync(file).size } : undefined;
         const s = await Session.fromStream(createReadStream(file, { highWaterMark: 65536 }), options);
         console.log(wasmMemoryBytes(), s.size);`,
        where,
        sized ? 'sized' : 'unsized',
      ],
      { cwd: testsDir, encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(child.status, 0, child.stderr);
    const [bytes, entries] = child.stdout.trim().split(' ').map(Number);
    assert.equal(entries, 2000);
    return bytes;
  };
  const sized = memory(true);
  const unsized = memory(false);
  // Copying at each doubling kept every smaller buffer in the heap: 1.9 × the sized figure.
  assert.ok(unsized <= sized * 1.4, `${unsized} bytes of memory without the size, ${sized} with it`);
});

test('an abort stops fromStream at once: a waiting ReadableStream is cancelled, an iterable is left', async () => {
  const file = bytes();
  const aborted = (e) => e.code === 'E_ABORTED';
  // Aborted before: nothing is read.
  const before = new AbortController();
  before.abort();
  let pulled = 0;
  const untouched = new ReadableStream(
    {
      pull(controller) {
        pulled++;
        controller.enqueue(file.subarray(0, 10));
      },
    },
    { highWaterMark: 0 },
  );
  await assert.rejects(Session.fromStream(untouched, { signal: before.signal }), aborted);
  assert.equal(pulled, 0);
  // A stream that gives half the file, then waits forever: the abort rejects the load and
  // cancels the stream.
  const controller = new AbortController();
  let cancelled = false;
  let sent = false;
  const stalled = new ReadableStream({
    pull(c) {
      if (sent) return new Promise(() => {});
      sent = true;
      c.enqueue(file.subarray(0, file.length >> 1));
    },
    cancel() {
      cancelled = true;
    },
  });
  const load = Session.fromStream(stalled, { signal: controller.signal });
  setTimeout(() => controller.abort(), 20);
  await assert.rejects(load, aborted);
  await new Promise((r) => setTimeout(r, 10));
  assert.ok(cancelled, 'the stream was cancelled');
  // An async iterable that waits forever after its first chunk: the load still rejects.
  const iterable = {
    async *[Symbol.asyncIterator]() {
      yield file.subarray(0, 1000);
      await new Promise(() => {});
    },
  };
  const c2 = new AbortController();
  const load2 = Session.fromStream(iterable, { signal: c2.signal });
  setTimeout(() => c2.abort(), 20);
  await assert.rejects(load2, aborted);
  // A signal that never aborts changes nothing; a bad one is refused.
  const s = await Session.fromStream(streamOf(chunksOf(file, random(3), 200_000)), {
    signal: new AbortController().signal,
  });
  same(s, file);
  s.free();
  await assert.rejects(Session.fromStream(streamOf([file]), { signal: {} }), (e) => e.code === 'E_INVALID_ARGUMENT');
});
