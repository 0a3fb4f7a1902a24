// snapcompact rendering speed and frame size in wasm under Node.js: 1 MB of conversation text
// printed onto frames (normalize + paginate + rasterize + PNG), per shape and compression.
// The text is the conformance input (../shared/conformance/snapcompact/input.txt) repeated to
// 1 MB when it is there, else a deterministic synthetic transcript of the same mix.
// Run: make bench (all benches) or node tests/bench/run.mjs snapcompact.
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { median, timesRow } from './lib.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

function syntheticTranscript() {
  let seed = 42;
  const rnd = (n) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  const words = (
    'the session compaction frame token model image render shape font glyph cell ' +
    'row column page budget provider archive history summary tool call output result error ' +
    'file path read write edit test build run fix bug line code function return value'
  ).split(' ');
  const parts = [];
  let size = 0;
  while (size < 70_000) {
    const kind = rnd(4);
    let s;
    if (kind === 0) s = `¶user:${Array.from({ length: 12 + rnd(30) }, () => words[rnd(words.length)]).join(' ')}.`;
    else if (kind === 1) s = `¶ai:${Array.from({ length: 20 + rnd(60) }, () => words[rnd(words.length)]).join(' ')}.`;
    else if (kind === 2) {
      const lines = Array.from(
        { length: 3 + rnd(20) },
        (_, i) => `  ${i}: const ${words[rnd(words.length)]} = ${rnd(1000)};`,
      );
      s = `¶call:read(path="src/${words[rnd(words.length)]}.ts")\n<out>\n\u000e${lines.join('\n')}\u000f\n</out>`;
    } else s = `¶think:${Array.from({ length: 10 + rnd(40) }, () => words[rnd(words.length)]).join(' ')}`;
    parts.push(s);
    size += s.length + 2;
  }
  return parts.join('\n\n');
}

function oneMegabyte() {
  const file = path.join(here, '../../../shared/conformance/snapcompact/input.txt');
  const unit = existsSync(file) ? readFileSync(file, 'utf8') : syntheticTranscript();
  let text = '';
  while (text.length < 1_000_000) text += `${unit}\n`;
  return { text, source: existsSync(file) ? 'conformance input.txt ×15' : 'synthetic transcript' };
}

export default async function () {
  const api = await import(process.env.CTXFOLD_PKG || 'ctxfold');
  const { text, source } = oneMegabyte();
  const rows = [];
  const cases = [
    ['11on16-bw', 'tuned', 5],
    ['11on16-bw', 'fast', 3],
    ['11on16-bw', 'high', 1],
    ['8on22-bw', 'tuned', 5],
    ['8on22-bw', 'fast', 3],
    ['8on22-bw', 'high', 1],
    ['doc-8on16-sent-dim', 'tuned', 3],
    ['doc-8on16-sent-dim', 'high', 1],
  ];
  for (const [shape, compression, samples] of cases) {
    const options = { shape, compression };
    // Warm-up: one whole render, so that V8 has tiered the module up (steady-state speed).
    api.renderFrames(text, options);
    const perFrame = [];
    let frames = [];
    for (let i = 0; i < samples; i++) {
      const t0 = performance.now();
      frames = api.renderFrames(text, options);
      perFrame.push((performance.now() - t0) / frames.length);
    }
    const full = frames.filter((f) => f.height === frames[0].height);
    const bytes = full.map((f) => f.png.length);
    const avg = Math.round(bytes.reduce((a, b) => a + b, 0) / bytes.length);
    const ms = median(perFrame);
    rows.push(
      timesRow(`${shape} ${frames[0].width} px, ${compression}`, perFrame, {
        unit: 'ms/frame',
        note:
          `${(1000 / ms).toFixed(0)} frames/s; ${frames.length} frames from 1 MB (${source}); ` +
          `full-frame PNG ${Math.min(...bytes)}–${Math.max(...bytes)} B, mean ${avg} B`,
      }),
    );
  }
  return rows;
}
