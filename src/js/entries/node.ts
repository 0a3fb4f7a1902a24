// Entry for Node.js (export condition "node"; also Deno and Bun, which honour it).
// Reads ctxfold_bg.wasm next to this file and instantiates it synchronously while this module is
// evaluated, so the API is usable right after `import` (or `require`, Node >= 20.19).
// The Node.js types are this file's alone (the reference below is not carried into the
// declarations: consumers need no @types/node).
/// <reference types="node" />
import { Buffer } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { useUtf8Writer } from '../core/args.js';
import * as bindings from '../core/glue.js';
import { setRaw } from '../core/raw.js';

bindings.initSync({ module: readFileSync(new URL('./ctxfold_bg.wasm', import.meta.url)) });
setRaw(bindings);
useUtf8Writer({
  alloc: (n) => Buffer.allocUnsafeSlow(n),
  write: (buffer, string, at) => (buffer as Buffer).write(string, at),
  length: (string) => Buffer.byteLength(string),
});

// The Node.js file store (docs/guide/storage.md).
export type { FileStore, FileStoreOptions } from '../storage/node-file.js';
export { createFileStore } from '../storage/node-file.js';
export * from './api.js';

/**
 * Resolves at once: under Node.js the WebAssembly module is loaded synchronously when the
 * package is imported. It exists so that code shared with the browser entry can always
 * `await init()`. The argument is ignored.
 */
export async function init(_input?: unknown): Promise<void> {}
