// The wasm-bindgen exports of the runtime-specific build. Each package entry point
// (node, web, workerd) imports its own bindgen output and hands it over with `setRaw`
// before any API call; the API modules read it through this live binding.
export let raw = null;

export function setRaw(bindings) {
  raw = bindings;
}

export function requireRaw() {
  if (raw === null) {
    const err = new Error(
      'ctxfold is not initialised: call `await init()` first (browser and bundler entry)',
    );
    err.code = 'E_NOT_INITIALISED';
    throw err;
  }
  return raw;
}

/**
 * `JSON.stringify` for data that becomes session content: a BigInt (a tool argument beyond
 * 2^53, say) is kept exact as a quoted decimal string (spec: compaction §5.1) instead of
 * making `JSON.stringify` throw.
 */
export function toJson(value) {
  return JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? v.toString() : v));
}
