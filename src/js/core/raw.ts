// The wasm-bindgen exports of the runtime-specific build. Each package entry point
// (node, web, workerd) imports its own bindgen output and hands it over with `setRaw`
// before any API call; the API modules read it through this live binding.
import { codedError } from './errors.js';
import type * as glue from './glue.js';

/** The wasm-bindgen glue's exports, as `import * as bindings from './glue.js'` gives them. @internal */
export type Bindings = typeof glue;

/** The bindings once an entry has set them, else null. @internal */
export let raw: Bindings | null = null;

const initListeners: Array<(bindings: Bindings) => void> = [];

/** Hands the initialised glue to the API modules (each entry, once). @internal */
export function setRaw(bindings: Bindings): void {
  raw = bindings;
  for (const listener of initListeners) listener(bindings);
}

/** Runs `listener(bindings)` once the bindings are set (at once if they already are). @internal */
export function onRaw(listener: (bindings: Bindings) => void): void {
  initListeners.push(listener);
  if (raw !== null) listener(raw);
}

/** The bindings, or `E_NOT_INITIALISED` before `init()`. @internal */
export function requireRaw(): Bindings {
  if (raw === null) {
    throw codedError(
      'E_NOT_INITIALISED',
      'ctxfold is not initialised: call `await init()` first (browser and bundler entry)',
    );
  }
  return raw;
}

/**
 * The result of a compaction commit from its JSON (`{entryId, tokensAfter, fromExtension,
 * timestamp}`), with `compactionEntry` read from the session `inner` (a `WasmSession`) the
 * first time it is asked for: the entry of a snapcompact archive is megabytes of frames.
 * @internal
 */
export function committed<T extends { entryId: string }>(
  json: string,
  inner: { entryJson(id: string): string | undefined },
): T {
  const result = JSON.parse(json) as T;
  let entry: unknown;
  Object.defineProperty(result, 'compactionEntry', {
    enumerable: true,
    get: () => {
      entry ??= JSON.parse(inner.entryJson(result.entryId) as string);
      return entry;
    },
  });
  return result;
}
