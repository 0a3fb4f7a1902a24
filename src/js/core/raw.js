// The wasm-bindgen exports of the runtime-specific build. Each package entry point
// (node, web, workerd) imports its own bindgen output and hands it over with `setRaw`
// before any API call; the API modules read it through this live binding.
import { codedError } from './errors.js';

export let raw = null;

const initListeners = [];

export function setRaw(bindings) {
  raw = bindings;
  for (const listener of initListeners) listener(bindings);
}

/** Runs `listener(bindings)` once the bindings are set (at once if they already are). */
export function onRaw(listener) {
  initListeners.push(listener);
  if (raw !== null) listener(raw);
}

export function requireRaw() {
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
 */
export function committed(json, inner) {
  const result = JSON.parse(json);
  let entry;
  Object.defineProperty(result, 'compactionEntry', {
    enumerable: true,
    get: () => {
      entry ??= JSON.parse(inner.entryJson(result.entryId));
      return entry;
    },
  });
  return result;
}
