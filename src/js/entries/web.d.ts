export * from '../core/session.js';

/** What `init` accepts as the source of the WebAssembly module. */
export type InitInput = string | URL | Request | Response | ArrayBuffer | ArrayBufferView | WebAssembly.Module;

/**
 * Loads and instantiates the WebAssembly module; call it once before any other function.
 * Without an argument it fetches `ctxfold_bg.wasm` next to the package's entry file.
 * Later calls return the first call's promise; a failed load may be retried.
 */
export function init(input?: InitInput | Promise<InitInput>): Promise<void>;

/**
 * Synchronous variant of `init` for bytes or a compiled module already at hand (workers, tests).
 */
export function initSync(input: ArrayBuffer | ArrayBufferView | WebAssembly.Module): void;
