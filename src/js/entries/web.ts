// Entry for browsers and bundlers (export conditions "browser" and "default").
// Nothing is fetched at import: call `await init()` once before using the API.
import * as bindings from '../core/glue.js';
import initGlue, { initSync as initGlueSync } from '../core/glue.js';
import { setRaw } from '../core/raw.js';

// Session stores of browsers: IndexedDB (windows and workers) and OPFS (dedicated workers).
export { createIndexedDbStore } from '../storage/indexeddb.js';
export { createOpfsStore, type OpfsStoreOptions } from '../storage/opfs.js';
export * from './api.js';

/** What `init` accepts as the source of the WebAssembly module. */
export type InitInput = string | URL | Request | Response | ArrayBuffer | ArrayBufferView | WebAssembly.Module;

let ready: Promise<void> | null = null;

/**
 * Loads and instantiates the WebAssembly module; call it once before any other function.
 * `input` is where it comes from: a URL (or URL string or Request) to fetch, a Response, the
 * bytes (ArrayBuffer or typed array), a compiled WebAssembly.Module, or a Promise of one of
 * these. By default it fetches `ctxfold_bg.wasm` next to this file (written as
 * `new URL(..., import.meta.url)` so bundlers emit the asset).
 * Later calls return the first call's promise; a failed load may be retried.
 */
export function init(input?: InitInput | Promise<InitInput>): Promise<void> {
  if (ready === null) {
    const moduleOrPath = input ?? new URL('./ctxfold_bg.wasm', import.meta.url);
    const loading = initGlue({ module_or_path: moduleOrPath }).then(() => {
      setRaw(bindings);
    });
    loading.catch(() => {
      ready = null;
    });
    ready = loading;
  }
  return ready;
}

/**
 * Synchronous variant of `init` for bytes or a compiled module already at hand (workers,
 * tests: browsers refuse to compile large modules synchronously on the main thread).
 */
export function initSync(input: ArrayBuffer | ArrayBufferView | WebAssembly.Module): void {
  initGlueSync({ module: input as ArrayBuffer | WebAssembly.Module });
  setRaw(bindings);
}
