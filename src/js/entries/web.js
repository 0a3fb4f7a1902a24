// Entry for browsers and bundlers (export conditions "browser" and "default").
// Nothing is fetched at import: call `await init()` once before using the API.
import * as bindings from '../core/glue.js';
import initGlue, { initSync as initGlueSync } from '../core/glue.js';
import { setRaw } from '../core/raw.js';

export * from '../core/session.js';

let ready = null;

/**
 * Loads and instantiates the WebAssembly module. `input` is where it comes from: a URL (or URL
 * string or Request) to fetch, a Response, the bytes (ArrayBuffer or typed array), a compiled
 * WebAssembly.Module, or a Promise of one of these. By default it fetches `ctxfold_bg.wasm` next
 * to this file (written as `new URL(..., import.meta.url)` so bundlers emit the asset).
 * Later calls return the first call's promise; a failed load may be retried.
 */
export function init(input) {
  if (ready === null) {
    const moduleOrPath = input ?? new URL('./ctxfold_bg.wasm', import.meta.url);
    ready = initGlue({ module_or_path: moduleOrPath }).then(() => {
      setRaw(bindings);
    });
    ready.catch(() => {
      ready = null;
    });
  }
  return ready;
}

/**
 * Synchronous variant for workers and tests that already hold the bytes or a compiled
 * WebAssembly.Module (browsers refuse to compile large modules synchronously on the main thread).
 */
export function initSync(input) {
  initGlueSync({ module: input });
  setRaw(bindings);
}
