export * from '../core/session.js';

/**
 * Resolves at once: in workerd (and other edge runtimes) the WebAssembly module is imported as
 * a compiled module (`ctxfold_bg.wasm?module`) and instantiated when the package is imported.
 * It exists so that code shared with the browser entry can always `await init()`. The argument
 * is ignored.
 */
export function init(input?: unknown): Promise<void>;
