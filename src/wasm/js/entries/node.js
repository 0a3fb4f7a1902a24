// Entry for Node.js (export condition "node"; also Deno and Bun, which honour it).
// The glue reads ctxfold_bg.wasm next to this file and instantiates it synchronously while this
// module is evaluated, so the API is usable right after `import` (or `require`, Node >= 20.19).
import * as bindings from './ctxfold_node.js';
import { setRaw } from './raw.js';

setRaw(bindings);

export * from './index.js';

/** Nothing to do here: the module is ready at import. Kept for code shared with the browser. */
export async function init(_input) {}
