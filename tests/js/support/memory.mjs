// Makes the module's memory grow on demand (the loads' tests: a view handed to a reader goes
// stale when it does). Each growth keeps sessions opened from buffers asked for 4 MiB and
// holding a header only: their pages are never touched, so the process's memory barely moves.
import { Session, wasmMemoryBytes } from 'ctxfold';

const HEADER = Buffer.from('{"type":"session","version":3,"id":"k"}\n');
const kept = [];

/** Makes the module's memory larger than it is now. */
export function growMemory() {
  const before = wasmMemoryBytes();
  while (wasmMemoryBytes() === before) {
    kept.push(
      Session.fromReader(4 << 20, (view) => {
        view.set(HEADER);
        return HEADER.length;
      }),
    );
  }
}

/** Frees what the growths kept. */
export function freeGrown() {
  for (const s of kept.splice(0)) s.free();
}
