// snapcompact through the built package under Node.js: shapes, billing, text pipeline, frames,
// fallback fonts, errors, and one conformance shape compared pixel by pixel.

import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { inflateSync } from 'node:zlib';
import * as ctxfold from 'ctxfold';
import { repoDir } from './support/project.mjs';

const conformance = path.join(repoDir, '../shared/conformance/snapcompact');
const unifontAsset = path.join(repoDir, 'fonts/compiled/unifont.cxfb');

function codeOf(fn) {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof Error, 'throws an Error');
    return err.code;
  }
  return 'no error';
}

/** Minimal PNG reader: IHDR, PLTE and the pixels as RGB triples (indexed, depth 1–8). */
function decodePng(bytes) {
  const buf = Buffer.from(bytes);
  assert.deepEqual([...buf.subarray(0, 8)], [137, 80, 78, 71, 13, 10, 26, 10], 'PNG signature');
  let at = 8;
  let ihdr;
  const plte = [];
  const idat = [];
  while (at < buf.length) {
    const len = buf.readUInt32BE(at);
    const type = buf.toString('latin1', at + 4, at + 8);
    const data = buf.subarray(at + 8, at + 8 + len);
    if (type === 'IHDR') {
      ihdr = { width: data.readUInt32BE(0), height: data.readUInt32BE(4), depth: data[8], colorType: data[9] };
    } else if (type === 'PLTE') {
      for (let i = 0; i < data.length; i += 3) plte.push([data[i], data[i + 1], data[i + 2]]);
    } else if (type === 'IDAT') idat.push(data);
    at += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const { width, height, depth, colorType } = ihdr;
  const stride = colorType === 3 ? Math.ceil((width * depth) / 8) : width * 3;
  const rgb = new Uint8Array(width * height * 3);
  const filters = new Set();
  for (let y = 0; y < height; y++) {
    const row = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    filters.add(raw[y * (stride + 1)]);
    for (let x = 0; x < width; x++) {
      let c;
      if (colorType === 3) {
        const bit = x * depth;
        const v = (row[bit >> 3] >> (8 - depth - (bit & 7))) & ((1 << depth) - 1);
        c = plte[v];
      } else c = [row[x * 3], row[x * 3 + 1], row[x * 3 + 2]];
      rgb.set(c, (y * width + x) * 3);
    }
  }
  return { ...ihdr, plte, rgb, filters };
}

test('resolveShape: presets by API and model ids across gateways', () => {
  const anthropic = ctxfold.resolveShape({ api: 'anthropic-messages' });
  assert.deepEqual(anthropic, {
    font: '8x13',
    cellWidth: 11,
    cellHeight: 16,
    stretch: false,
    variant: 'bw',
    lineRepeat: 1,
    frameSize: 1568,
    frameTokenEstimate: 3293,
  });
  const fable = ctxfold.resolveShape({ id: 'anthropic/claude-fable-5', api: 'openai-completions' });
  assert.equal(fable.frameSize, 1932);
  assert.equal(fable.frameTokenEstimate, Math.ceil(61 * 61 * 1.2));
  assert.equal(fable.imageDetail, 'original');
  assert.equal(ctxfold.resolveShape('gemini-3.5-flash').frameSize, 2048);
  assert.deepEqual(ctxfold.resolveShape({ id: 'claude-opus-4-6', api: 'anthropic-messages' }), anthropic);
  assert.equal(ctxfold.resolveShape(undefined, '8x8r-bw').lineRepeat, 2);
  assert.deepEqual(ctxfold.idealShapeVariant('claude-opus-4-7'), { variant: '11on16-bw', frameSize: 1932 });
  assert.equal(ctxfold.idealShapeVariant('qwen/qwen3-vl'), undefined);
});

test('geometry, isShape and the catalogue names', () => {
  assert.deepEqual(ctxfold.geometry('11on16-bw'), { cols: 142, rows: 98, capacity: 13916 });
  assert.deepEqual(ctxfold.geometry('11on16-bw', 1932), { cols: 175, rows: 120, capacity: 21000 });
  assert.deepEqual(ctxfold.geometry('doc-8on16-bw', 2048), { cols: 126, rows: 128, capacity: 32256 });
  const names = ctxfold.shapeVariantNames();
  assert.equal(names.length, 17);
  for (const name of names) {
    assert.ok(ctxfold.isShapeVariantName(name));
    assert.ok(ctxfold.isShape(ctxfold.resolveShape({ api: 'openai-responses' }, name)), name);
  }
  assert.ok(ctxfold.isShapeVariantName('silver16-bw'));
  assert.ok(!ctxfold.isShapeVariantName('auto'));
  const openai = ctxfold.resolveShape({ api: 'openai-responses' });
  assert.ok(ctxfold.isShape(openai));
  assert.ok(!ctxfold.isShape({ ...openai, cellWidth: 0 }));
  assert.ok(!ctxfold.isShape({ ...openai, variant: 'color' }));
  assert.ok(!ctxfold.isShape('8on22-bw'));
});

test('normalize, scanRenderability, dimStopwords, wrap (spec §6)', () => {
  assert.equal(ctxfold.normalize('x → y ✓ “quoted” — em…'), 'x -> y v "quoted" - em...');
  assert.equal(ctxfold.normalize('a\n\n\tb   c\r\nd', '8on16-bw'), 'a█b c█d');
  assert.equal(ctxfold.normalize('✅ pass ⚠️ warn ❌ fail 😄'), '[OK] pass [WARN] warn [FAIL] fail');
  assert.deepEqual(ctxfold.scanRenderability('\uE000'.repeat(10)), { unrenderableRatio: 1, isSafe: false });
  assert.equal(ctxfold.dimStopwords('the cat'), '\u000ethe\u000f cat');
  assert.deepEqual(ctxfold.wrap('xx abcdefghij yy', 4), ['xx', 'abcd', 'efgh', 'ij', 'yy']);
  assert.equal(
    ctxfold.elideDataUrls('see data:image/png;base64,QUFBQQ== end'),
    'see [data URL omitted: image/png, 8 base64 chars] end',
  );
});

test('serializeConversation (spec §6.2)', () => {
  const messages = [
    { role: 'user', content: 'do the thing' },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'before' },
        { type: 'toolCall', id: 'c1', name: 'read', arguments: { path: 'a.ts' } },
        { type: 'text', text: 'after' },
      ],
    },
    { role: 'toolResult', toolCallId: 'c1', content: [{ type: 'text', text: 'file body' }] },
  ];
  assert.equal(
    ctxfold.serializeConversation(messages, { dimToolResults: false }),
    '¶user:do the thing\n\n¶ai:before\n\n¶call:read(path="a.ts")\n<out>\nfile body\n</out>\n\n¶ai:after',
  );
  const long = [{ role: 'toolResult', toolCallId: 'x', content: 'y'.repeat(5000) }];
  assert.ok(!ctxfold.serializeConversation(long, { toolResultMaxChars: Infinity }).includes('elided'));
  assert.ok(ctxfold.serializeConversation(long).includes('[…3000ch elided…]'));
});

test('billing and budgets (spec §4.2, §5)', () => {
  assert.equal(ctxfold.frameTokens('anthropic-messages', 1568), 3293);
  assert.equal(ctxfold.frameTokens('openai-responses', 2576), 7874);
  assert.equal(ctxfold.frameTokens('google-vertex', 2048), 1120);
  assert.equal(ctxfold.billingFamily('mistral'), 'unknown');
  assert.equal(ctxfold.providerImageBudget('anthropic'), 90);
  assert.equal(ctxfold.providerImageBudget('groq'), 5);
  assert.equal(ctxfold.providerImageBudget('umans', 'anthropic-messages'), 10);
  assert.equal(ctxfold.providerImageBudget('gateway', 'google-generative-ai'), 200);
  assert.equal(ctxfold.providerImageBudget('anthropic', undefined, { images: { anthropic: 12 } }), 12);
  assert.equal(ctxfold.providerImageByteBudget('anthropic'), undefined);
  assert.equal(ctxfold.providerImageByteBudget('anthropic', { bytes: { anthropic: 1e6 } }), 1e6);
  assert.equal(ctxfold.providerFrameBudget('openai'), 80);
});

test('renderFrames: PNG frames, frameCount agrees, maxFrames, minHeight', () => {
  const text = 'Reading the films of the archive. Again. '.repeat(60);
  const options = { shape: '11on16-bw', frameSize: 320 };
  const frames = ctxfold.renderFrames(text, options);
  assert.equal(ctxfold.frameCount(text, options), frames.length);
  assert.ok(frames.length > 1);
  const first = frames[0];
  assert.ok(first.png instanceof Uint8Array);
  assert.equal(first.chars, 580);
  const png = decodePng(first.png);
  assert.deepEqual([png.width, png.height, png.colorType, png.depth], [320, 320, 3, 1]);
  assert.deepEqual([...png.filters], [0]);
  assert.equal(ctxfold.renderFrames(text, { ...options, maxFrames: 1 }).length, 1);
  assert.deepEqual(ctxfold.renderFrames('', options), []);
  const short = ctxfold.renderFrames('hi', { ...options, minHeight: 0 })[0];
  assert.equal(short.height, 16);
  assert.equal(ctxfold.renderFrames('hi', options)[0].height, 64);
  const one = ctxfold.renderFrame(frames[1].page, options);
  assert.deepEqual(one.png, frames[1].png);
  // Every compression setting decodes to the same pixels.
  const pixels = ['tuned', 'fast', 'high', 3].map(
    (c) => decodePng(ctxfold.renderFrame(first.page, { ...options, compression: c }).png).rgb,
  );
  for (const p of pixels) assert.deepEqual(p, pixels[0]);
});

test('errors carry stable codes', () => {
  assert.equal(
    codeOf(() => ctxfold.renderFrames('x', { shape: 'zebra' })),
    'E_SHAPE',
  );
  assert.equal(
    codeOf(() => ctxfold.renderFrames('x', { frameSize: 0 })),
    'E_OPTIONS',
  );
  assert.equal(
    codeOf(() => ctxfold.renderFrames('x', { frameSize: 4, shape: '11on16-bw' })),
    'E_SHAPE',
  );
  assert.equal(
    codeOf(() => ctxfold.renderFrames('x', { compression: 'zip' })),
    'E_OPTIONS',
  );
  assert.equal(
    codeOf(() => ctxfold.renderFrames(42)),
    'E_INVALID_ARGUMENT',
  );
  assert.equal(
    codeOf(() => ctxfold.geometry({ font: '9x9' })),
    'E_SHAPE',
  );
  assert.equal(
    codeOf(() => ctxfold.registerFallbackFont(new Uint8Array([1, 2, 3]))),
    'E_FONT',
  );
  ctxfold.clearFallbackFonts();
  assert.equal(
    codeOf(() => ctxfold.renderFrames('你好', { shape: 'unifont16-bw' })),
    'E_FONT',
  );
});

test('fallback font: Unifont prints CJK, and CJK-heavy text switches shape', () => {
  ctxfold.clearFallbackFonts();
  assert.equal(ctxfold.normalize('你好', '8on16-bw'), '??');
  const glyphs = ctxfold.registerFallbackFont(readFileSync(unifontAsset));
  assert.ok(glyphs > 50000, `${glyphs} glyphs`);
  assert.equal(ctxfold.normalize('你好', '8on16-bw'), '你好');
  const frame = ctxfold.renderFrames('你', { shape: '8on16-bw', frameSize: 64 })[0];
  assert.equal(frame.chars, 1);
  const cjk = 'こんにちは 你好 안녕 世界 한국어';
  assert.equal(ctxfold.shapeFor(cjk, { model: { api: 'anthropic-messages' } }).font, 'unifont');
  assert.equal(ctxfold.resolveShape({ api: 'anthropic-messages' }, undefined, cjk).font, 'unifont');
  ctxfold.clearFallbackFonts();
});

test('conformance 8on22-bw in wasm: frames, page texts and pixels equal the reference', {
  skip: !existsSync(conformance) && !process.env.CI,
}, () => {
  assert.ok(existsSync(conformance), 'conformance data missing (required under CI=true)');
  ctxfold.registerFallbackFont(readFileSync(unifontAsset));
  try {
    const dir = path.join(conformance, '8on22-bw');
    const meta = JSON.parse(readFileSync(path.join(dir, 'frames.json'), 'utf8'));
    const input = readFileSync(path.join(conformance, 'input.txt'), 'utf8');
    const frames = ctxfold.renderFrames(input, { shape: '8on22-bw' });
    assert.equal(frames.length, meta.frames.length);
    frames.forEach((frame, i) => {
      const want = meta.frames[i];
      assert.deepEqual([frame.width, frame.height, frame.chars], [want.width, want.height, want.chars], `frame ${i}`);
      const pageWant = readFileSync(path.join(dir, `page-${String(i).padStart(3, '0')}.txt`), 'utf8');
      // The one allowed difference: `?` where the reference's fallback font lacked a glyph.
      const ours = frame.page === pageWant ? frame : ctxfold.renderFrame(pageWant, { shape: '8on22-bw' });
      const a = decodePng(ours.png);
      const b = decodePng(readFileSync(path.join(dir, `frame-${String(i).padStart(3, '0')}.png`)));
      for (let y = 0; y < a.height; y++) {
        const row = a.width * 3;
        const same =
          Buffer.compare(
            Buffer.from(a.rgb.subarray(y * row, (y + 1) * row)),
            Buffer.from(b.rgb.subarray(y * row, (y + 1) * row)),
          ) === 0;
        assert.ok(same, `frame ${i} row ${y} differs`);
      }
    });
  } finally {
    ctxfold.clearFallbackFonts();
  }
});

test('types: a consumer of the snapcompact API type-checks', async () => {
  const { spawnSync } = await import('node:child_process');
  const { mkdirSync, rmSync, writeFileSync } = await import('node:fs');
  const { outDir, testsDir } = await import('./support/project.mjs');
  const dir = path.join(outDir, 'types', 'snapcompact');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  const compilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: false,
    target: 'es2022',
    types: [],
    lib: ['es2022'],
    exactOptionalPropertyTypes: true,
    noUncheckedIndexedAccess: true,
    module: 'nodenext',
    moduleResolution: 'nodenext',
  };
  writeFileSync(path.join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions, include: ['main.mts'] }));
  writeFileSync(
    path.join(dir, 'main.mts'),
    `
    import { renderFrames, renderFrame, frameCount, resolveShape, geometry, normalize, registerFallbackFont,
      isShape, type Frame, type Shape, type RenderOptions } from 'ctxfold';
    const shape: Shape = resolveShape({ id: 'claude-opus-4-7', api: 'anthropic-messages' });
    const opts: RenderOptions = { shape, maxFrames: 3, compression: 'tuned', minHeight: 0 };
    const frames: Frame[] = renderFrames('hello', opts);
    const bytes: Uint8Array | undefined = frames[0]?.png;
    const n: number = frameCount('hello', { shape: '8on22-bw', model: 'gemini-3-pro-preview' });
    const one: Frame = renderFrame('page', { shape: 'doc-8on16-sent-dim' });
    const cols: number = geometry('11on16-bw', 1932).cols;
    const s: string = normalize('x → y', '6x12-dim');
    const glyphs: number = registerFallbackFont(new Uint8Array(0));
    const ok: boolean = isShape({});
    // @ts-expect-error not a catalogue name
    renderFrames('x', { shape: '9x9-bw' });
    // @ts-expect-error compression levels are 1-9
    renderFrames('x', { compression: 12 });
    export { bytes, n, one, cols, s, glyphs, ok };
    `,
  );
  const tsc = path.join(testsDir, 'node_modules', '.bin', 'tsc');
  const res = spawnSync(tsc, ['-p', dir], { encoding: 'utf8', timeout: 120_000 });
  assert.equal(res.status, 0, `tsc failed:\n${res.stdout}${res.stderr}`);
});
