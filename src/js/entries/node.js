// Entry for Node.js (export condition "node"; also Deno and Bun, which honour it).
// Reads ctxfold_bg.wasm next to this file and instantiates it synchronously while this module is
// evaluated, so the API is usable right after `import` (or `require`, Node >= 20.19).
import { Buffer } from 'node:buffer';
import { readFileSync } from 'node:fs';
import { useUtf8Writer } from '../core/args.js';
import * as bindings from '../core/glue.js';
import { setRaw } from '../core/raw.js';

bindings.initSync({ module: readFileSync(new URL('./ctxfold_bg.wasm', import.meta.url)) });
setRaw(bindings);
useUtf8Writer({
  alloc: (n) => Buffer.allocUnsafeSlow(n),
  write: (buffer, string, at) => buffer.write(string, at),
  length: (string) => Buffer.byteLength(string),
});

export * from '../core/session.js';

/** Nothing to do here: the module is ready at import. Kept for code shared with the browser. */
export async function init(_input) {}
