// Every public operation on a generated ~200 MB session (issue: hardening, "deep and large
// inputs"), timed once each, with the wasm linear memory after it against the file's size
// (wasm memory only grows, so each figure is the peak so far). The operations and their
// checks are shared with tests/js/large.test.mjs.
import { Session, wasmMemoryBytes } from 'ctxfold';
import { largeSessionBytes, largeSessionSteps } from '../js/support/large-workload.mjs';
import { timed } from './lib.mjs';

export default async function () {
  const bytes = largeSessionBytes({ release: true });
  const mb = bytes.length / 1e6;
  const rows = [];
  let session;
  for (const step of largeSessionSteps()) {
    const [t, value] = timed(() => {
      if (!step.load) return step.run(session);
      session = Session.fromJsonl(bytes);
      return session;
    });
    const memory = wasmMemoryBytes() / 1e6;
    const note = step.note ? `${step.note(value, bytes)}; ` : '';
    rows.push({
      name: step.name,
      median: t,
      unit: 'ms',
      samples: 1,
      note: `${note}wasm memory ${memory.toFixed(0)} MB = ${(memory / mb).toFixed(2)} × the file`,
    });
  }
  session.free();
  return rows;
}
