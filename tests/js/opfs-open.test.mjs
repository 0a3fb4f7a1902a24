// The OPFS store's `open` while a rewrite's move over the session's file is still landing
// (Chromium replaces the destination in two steps, so a terminated worker's last `move()` can
// leave the name found and its file not, for a moment): `open` looks the name up again, and
// gives up with the browser's error only when the file stays missing. A stand-in directory
// handle plays the browser's part in Node.js (the store takes a handle as its directory); the
// real OPFS runs in tests/browser/storage.test.mjs.
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { pkgDir } from './support/project.mjs';

const { createOpfsStore } = await import(pathToFileURL(path.join(pkgDir, 'storage', 'opfs.js')).href);

const notFound = () => new DOMException('A requested file or directory could not be found.', 'NotFoundError');

/** A directory holding `s.jsonl` whose file goes missing for the first `gone` reads. */
function directory(gone, bytes = new TextEncoder().encode('{"type":"session"}\n')) {
  const calls = { lookups: 0, reads: 0 };
  const dir = {
    async getFileHandle(name) {
      calls.lookups++;
      if (name !== 's.jsonl') throw notFound();
      return {
        async getFile() {
          calls.reads++;
          if (calls.reads <= gone) throw notFound();
          return new Blob([bytes]);
        },
      };
    },
  };
  return { dir, calls, bytes };
}

test('opfs open: a file missing behind its name for a moment is read once the move lands', async () => {
  const { dir, calls, bytes } = directory(3);
  const store = createOpfsStore({ directory: dir });
  assert.deepEqual(await store.open('s'), bytes);
  assert.equal(calls.reads, 4);
  assert.equal(calls.lookups, 4, 'the name is looked up again before each read');
});

test('opfs open: a file that stays missing gives the browser error; no name gives null', async () => {
  const { dir, calls } = directory(Number.POSITIVE_INFINITY);
  const store = createOpfsStore({ directory: dir });
  await assert.rejects(store.open('s'), { name: 'NotFoundError' });
  assert.ok(calls.reads > 1 && calls.reads <= 20, `${calls.reads} reads`);
  assert.equal(await store.open('other'), null);
});

test('opfs open: other errors are not retried', async () => {
  let reads = 0;
  const dir = {
    async getFileHandle() {
      return {
        async getFile() {
          reads++;
          throw new DOMException('denied', 'NotAllowedError');
        },
      };
    },
  };
  await assert.rejects(createOpfsStore({ directory: dir }).open('s'), { name: 'NotAllowedError' });
  assert.equal(reads, 1);
});
