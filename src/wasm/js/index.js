// Public API of the ctxfold package, shared by every runtime entry point.
import { requireRaw } from './raw.js';

/** Version of the ctxfold core (from Cargo.toml). */
export function version() {
  return requireRaw().version();
}
