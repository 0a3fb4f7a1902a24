// The line writer of `Session.fromMessages` (args.js JsonlWriter): UTF-8 lines in one buffer,
// written by TextEncoder or, under Node.js, by Buffer (`useUtf8Writer`), the buffer kept for
// the next writer. Both writers must give TextEncoder's bytes, whatever the buffer held before.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { Session } from 'ctxfold';
import { pkgDir } from './support/project.mjs';

const argsUrl = pathToFileURL(path.join(pkgDir, 'core', 'args.js')).href;
// The module the Node.js entry set Buffer's writer on, and a second instance of it that keeps
// TextEncoder (a module's instance is per URL).
const withBuffer = await import(argsUrl);
const withEncoder = await import(`${argsUrl}?encoder`);

const LINES = [
  '{"ascii":"plain text"}',
  `{"latin1":"${'ünïcode '.repeat(300)}"}`,
  `{"bmp":"${'日本語 '.repeat(700)}"}`,
  `{"astral":"${'🙂 '.repeat(900)}"}`,
  // A lone surrogate: TextEncoder writes U+FFFD, and so must Buffer.
  '{"lone":"a\ud800b"}',
  '',
  'x'.repeat(70_000),
];
const expected = (lines) => new TextEncoder().encode(lines.map((l) => `${l}\n`).join(''));
/** The bytes as a plain Uint8Array (Buffer's writer makes Buffers, which deepEqual tells apart). */
const plain = (bytes) => new Uint8Array(bytes);

for (const [name, args] of [
  ['TextEncoder', withEncoder],
  ['Buffer', withBuffer],
]) {
  test(`${name}: lines come out as TextEncoder's UTF-8, the buffer growing past its first size`, () => {
    // Sized for 10 UTF-16 units: every line past the first makes it grow.
    const w = new args.JsonlWriter(10);
    for (const line of LINES) w.add(line);
    assert.equal(w.count, LINES.length);
    assert.equal(Buffer.isBuffer(w.bytes()), name === 'Buffer', 'the writer in use');
    assert.deepEqual(plain(w.bytes()), expected(LINES));
    w.release();
  });

  test(`${name}: the next writer reuses the released buffer and shows none of its old bytes`, () => {
    const long = new args.JsonlWriter(200_000);
    for (const line of LINES) long.add(line);
    const first = long.bytes();
    long.release();
    const short = new args.JsonlWriter(100);
    short.add('{"b":2}');
    assert.equal(short.bytes().buffer, first.buffer, 'the buffer is reused');
    assert.deepEqual(plain(short.bytes()), expected(['{"b":2}']));
    short.release();
    // A writer asking for more than the kept buffer holds gets a new one.
    const larger = new args.JsonlWriter(first.buffer.byteLength * 2);
    assert.notEqual(larger.bytes().buffer, first.buffer);
    larger.release();
  });
}

test('fromMessages after a larger fromMessages: the session holds only its own lines', () => {
  const big = Array.from({ length: 50 }, (_, i) => ({ role: 'user', content: `${'long text '.repeat(2_000)}${i}` }));
  const options = { format: 'openai-chat', now: Date.UTC(2026, 11, 6), ids: 'deterministic' };
  Session.fromMessages(big, options).free();
  const small = Session.fromMessages([{ role: 'user', content: 'hi' }], options);
  try {
    assert.equal(small.size, 1);
    const lines = small.toJsonl().trimEnd().split('\n');
    assert.equal(lines.length, 2);
    assert.equal(JSON.parse(lines[1]).message.content, 'hi');
    assert.deepEqual(small.toMessages({ format: 'openai-chat' }).messages, [{ role: 'user', content: 'hi' }]);
  } finally {
    small.free();
  }
});
