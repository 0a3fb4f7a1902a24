export * from '../core/session.js';

/**
 * Resolves at once: under Node.js the WebAssembly module is loaded synchronously when the
 * package is imported. It exists so that code shared with the browser entry can always
 * `await init()`. The argument is ignored.
 */
export function init(input?: unknown): Promise<void>;
