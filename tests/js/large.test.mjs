// A ~200 MB session through every public operation (issue: hardening, item 3): each one
// finishes with the right kind of answer, the save is byte-identical, and the wasm memory never
// grows beyond what the input needs (the file is in wasm memory once; nothing may hold a
// second copy: a transcript, a save or a string of the file goes out in pieces).

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Session, wasmMemoryBytes } from 'ctxfold';
import { largeSessionBytes, largeSessionSteps } from './support/large-workload.mjs';

/** Peak wasm memory allowed, as a multiple of the file (measured: 1.17). */
const MEMORY_BOUND = 1.4;

test('a 200 MB session: every operation, within memory', () => {
  const bytes = largeSessionBytes();
  assert.ok(bytes.length > 190e6, `${bytes.length} bytes`);
  const session = Session.fromJsonl(bytes);
  try {
    for (const step of largeSessionSteps()) {
      const value = step.load ? session : step.run(session);
      assert.ok(step.check(value, bytes, session), `${step.name}: unexpected result`);
      const ratio = wasmMemoryBytes() / bytes.length;
      assert.ok(ratio <= MEMORY_BOUND, `${step.name}: wasm memory ${ratio.toFixed(2)} × the file`);
    }
  } finally {
    session.free();
  }
});
