// Entry for Cloudflare Workers (condition "workerd") and Vercel Edge (condition "edge-light").
// Their bundlers turn a `.wasm?module` import into a compiled WebAssembly.Module (typed by
// ./wasm-module.ts); the module is instantiated synchronously at import: no fetch, no eval, no
// top-level await.

import * as bindings from '../core/glue.js';
import { setRaw } from '../core/raw.js';
import wasmModule from './ctxfold_bg.wasm?module';

bindings.initSync({ module: wasmModule });
setRaw(bindings);

// The session store of a Cloudflare Durable Object (its SQLite storage API).
export { createDurableObjectStore, type DurableObjectSqlStorage } from '../storage/durable-object.js';
export * from './api.js';

/**
 * Resolves at once: in workerd (and other edge runtimes) the WebAssembly module is imported as
 * a compiled module (`ctxfold_bg.wasm?module`) and instantiated when the package is imported.
 * It exists so that code shared with the browser entry can always `await init()`. The argument
 * is ignored.
 */
export async function init(_input?: unknown): Promise<void> {}
