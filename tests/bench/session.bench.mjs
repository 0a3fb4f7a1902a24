// Loading a generated 50,000-entry (~144 MB) session into wasm under Node.js, and building the
// LLM context of its active path (issue: foundation, "Speed and size").
//
// The session comes from the crate's generator (`gen-session --preset bench`) and is cached in
// tests/out/bench/. It is handed over as a Uint8Array, as an app that read the file would.
import { Session, wasmMemoryBytes } from 'ctxfold';
import { generatedSession as generated, timed, timesRow } from './lib.mjs';

export default async function () {
  const bytes = generated('bench-50k.jsonl', ['--preset', 'bench']);
  const mb = (bytes.length / 1e6).toFixed(1);
  const rows = [];

  // The first load in a fresh process also grows the wasm memory from nothing.
  const rssBefore = process.memoryUsage().rss;
  const [cold, first] = timed(() => Session.fromJsonl(bytes));
  const [coldCtx] = timed(() => first.buildContext());
  const peakRss = process.resourceUsage().maxRSS * 1024;
  const wasmBytes = wasmMemoryBytes();
  rows.push(timesRow('load, first in process (cold)', [cold], { note: `${mb} MB, ${first.size} entries` }));
  rows.push(timesRow('buildContext, first call', [coldCtx]));
  first.free();

  const loads = [];
  const contexts = [];
  const sizes = [];
  for (let i = 0; i < 7; i++) {
    const [t, s] = timed(() => Session.fromJsonl(bytes));
    loads.push(t);
    const [c, ctx] = timed(() => s.buildContext());
    contexts.push(c);
    sizes.push(ctx.messages.length);
    s.free();
  }
  rows.push(timesRow('load (parse + migrate + index), warm', loads, { note: `${mb} MB Uint8Array` }));
  rows.push(timesRow('buildContext of the active path', contexts, { note: `${sizes[0]} messages, incl. JSON.parse` }));
  rows.push({
    name: 'peak RSS of the process (file + wasm + Node)',
    median: peakRss / 1e6,
    unit: 'MB',
    samples: 1,
    note: `RSS before load ${(rssBefore / 1e6).toFixed(0)} MB (the file's bytes included)`,
  });
  rows.push({ name: 'wasm linear memory after load', median: wasmBytes / 1e6, unit: 'MB', samples: 1 });
  return rows;
}
