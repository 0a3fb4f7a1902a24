// Entry for Cloudflare Workers (condition "workerd") and Vercel Edge (condition "edge-light").
// Their bundlers turn a `.wasm?module` import into a compiled WebAssembly.Module; the module is
// instantiated synchronously at import: no fetch, no eval, no top-level await.

import * as bindings from '../core/glue.js';
import { setRaw } from '../core/raw.js';
import wasmModule from './ctxfold_bg.wasm?module';

bindings.initSync({ module: wasmModule });
setRaw(bindings);

export * from '../core/session.js';

/** Nothing to do here: the module is ready at import. Kept for code shared with the browser. */
export async function init(_input) {}
