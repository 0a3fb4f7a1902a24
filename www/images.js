// Images the explorer shows: only bytes the session holds (base64 image blocks, snapcompact
// frames) or frames rendered here. They become blob: URLs of a type sniffed from the bytes
// themselves (PNG, JPEG, GIF, WebP: never SVG, never a URL named by the session).
import { fmt, fmtBytes, h } from './dom.js';
import { frameTokens } from './pkg/entries/web.js';

/** blob: URLs made for one view, revoked together when the view is replaced. */
export class UrlScope {
  constructor() {
    this.urls = [];
  }
  make(blob) {
    const url = URL.createObjectURL(blob);
    this.urls.push(url);
    return url;
  }
  revokeAll() {
    for (const url of this.urls) URL.revokeObjectURL(url);
    this.urls = [];
  }
}

/** The raster type of `bytes` from its signature, or null. */
export function sniffImageType(bytes) {
  if (!(bytes instanceof Uint8Array) || bytes.length < 12) return null;
  const b = bytes;
  if (b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47) return 'image/png';
  if (b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (b[0] === 0x47 && b[1] === 0x49 && b[2] === 0x46 && b[3] === 0x38) return 'image/gif';
  if (
    b[0] === 0x52 &&
    b[1] === 0x49 &&
    b[2] === 0x46 &&
    b[3] === 0x46 &&
    b[8] === 0x57 &&
    b[9] === 0x45 &&
    b[10] === 0x42 &&
    b[11] === 0x50
  ) {
    return 'image/webp';
  }
  return null;
}

/** Width and height from a PNG's IHDR, or null. */
export function pngSize(bytes) {
  if (sniffImageType(bytes) !== 'image/png' || bytes.length < 24) return null;
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return { width: v.getUint32(16), height: v.getUint32(20) };
}

/** Base64 → bytes, or null when it is not base64. */
export function decodeBase64(data) {
  if (typeof data !== 'string') return null;
  let bin;
  try {
    bin = atob(data.replace(/\s+/g, ''));
  } catch {
    return null;
  }
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/**
 * An `<img>` for an image content block `{data, mimeType}` of the session, or a note saying why
 * it is not shown.
 */
export function sessionImage(block, scope, { className = 'content-image' } = {}) {
  const bytes = decodeBase64(block?.data);
  const type = bytes && sniffImageType(bytes);
  const declared = typeof block?.mimeType === 'string' ? block.mimeType : '(no type)';
  if (!type) {
    return h(
      'p',
      { class: 'note' },
      `[image not shown: ${declared}, ${bytes ? 'not a PNG/JPEG/GIF/WebP' : 'not base64'}]`,
    );
  }
  const img = h('img', {
    class: className,
    alt: `image (${declared}, ${fmtBytes(bytes.length)})`,
    src: scope.make(new Blob([bytes], { type })),
    decoding: 'async',
    loading: 'lazy',
  });
  return h(
    'figure',
    { class: 'content-figure' },
    img,
    h('figcaption', { class: 'muted small', text: `${declared} · ${fmtBytes(bytes.length)}` }),
  );
}

/** Providers whose image billing the cost table shows (spec: snapcompact §4.2). */
export const BILLING = [
  { name: 'Anthropic', api: 'anthropic-messages' },
  { name: 'OpenAI', api: 'openai-responses' },
  { name: 'Google', api: 'google-generative-ai' },
];

/**
 * Frames as shown: `{bytes, width, height, chars, cols, rows}`. Accepts rendered frames
 * (`{png, width, …}`) and archived ones (`{data: base64, mimeType, cols, rows, chars}`).
 */
export function normalizeFrames(frames) {
  const out = [];
  for (const f of frames ?? []) {
    if (!f || typeof f !== 'object') continue;
    const bytes = f.png instanceof Uint8Array ? f.png : decodeBase64(f.data);
    const size = bytes ? pngSize(bytes) : null;
    out.push({
      bytes: size ? bytes : null,
      width: size?.width ?? f.width ?? 0,
      height: size?.height ?? f.height ?? 0,
      chars: Number.isFinite(f.chars) ? f.chars : null,
      cols: Number.isFinite(f.cols) ? f.cols : null,
      rows: Number.isFinite(f.rows) ? f.rows : null,
      note: bytes
        ? size
          ? null
          : 'not a PNG'
        : typeof f.data === 'string' && f.data.startsWith('blob:')
          ? 'external blob reference'
          : 'no image data',
    });
  }
  return out;
}

/** Billed tokens of `frames` for each provider family (a frame of width S bills as S×S). */
export function frameCosts(frames) {
  return BILLING.map(({ name, api }) => {
    let total = 0;
    const perWidth = new Map();
    for (const f of frames) {
      if (!f.width) continue;
      const t = frameTokens(api, f.width);
      perWidth.set(f.width, t);
      total += t;
    }
    return { name, api, total, perWidth };
  });
}

/**
 * A gallery of frames with their billed cost per provider. `textTokens`, when given, is the
 * estimate of the same history as text, for comparison.
 */
export function framesGallery(rawFrames, scope, { title = 'Frames', textTokens, lightbox } = {}) {
  const frames = normalizeFrames(rawFrames);
  const box = h('section', { class: 'frames', dataset: { frames: frames.length } });
  const bytes = frames.reduce((n, f) => n + (f.bytes?.length ?? 0), 0);
  box.append(
    h('h4', {
      text: `${title}: ${fmt(frames.length)} frame${frames.length === 1 ? '' : 's'}, ${fmtBytes(bytes)} of PNG`,
    }),
  );

  const costs = frameCosts(frames);
  const table = h('table', { class: 'costs' });
  const headRow = h(
    'tr',
    null,
    h('th', { text: 'provider' }),
    h('th', { text: 'per frame' }),
    h('th', { text: `${fmt(frames.length)} frames` }),
  );
  if (Number.isFinite(textTokens)) headRow.append(h('th', { text: 'vs. as text' }));
  table.append(h('thead', null, headRow));
  const body = h('tbody');
  for (const c of costs) {
    const per = [...c.perWidth].map(([w, t]) => `${fmt(t)} @ ${w} px`).join(', ') || '—';
    const row = h(
      'tr',
      { dataset: { provider: c.api } },
      h('td', { text: c.name }),
      h('td', { text: per }),
      h('td', { class: 'num', text: fmt(c.total) }),
    );
    if (Number.isFinite(textTokens)) {
      const ratio = textTokens > 0 ? c.total / textTokens : NaN;
      row.append(
        h('td', {
          class: 'num',
          text: Number.isFinite(ratio) ? `${(ratio * 100).toFixed(0)} % of ${fmt(textTokens)}` : '—',
        }),
      );
    }
    body.append(row);
  }
  table.append(body);
  box.append(table);

  const grid = h('div', { class: 'frame-grid' });
  frames.forEach((f, i) => {
    const caption = `#${i + 1} · ${f.width}×${f.height}${f.chars !== null ? ` · ${fmt(f.chars)} chars` : ''}${f.bytes ? ` · ${fmtBytes(f.bytes.length)}` : ''}`;
    if (!f.bytes) {
      grid.append(
        h('div', { class: 'frame missing' }, h('span', { class: 'muted small', text: `#${i + 1}: ${f.note}` })),
      );
      return;
    }
    const src = scope.make(new Blob([f.bytes], { type: 'image/png' }));
    f.src = src;
    const button = h(
      'button',
      { type: 'button', class: 'frame', title: 'Show full size', onclick: () => lightbox?.open(frames, i) },
      h('img', { src, alt: `snapcompact frame ${i + 1}`, decoding: 'async', loading: 'lazy' }),
      h('span', { class: 'small muted', text: caption }),
    );
    grid.append(button);
  });
  box.append(grid);
  return box;
}

/** The full-size frame viewer (a modal `<dialog>`), with ←/→ between frames. */
export class Lightbox {
  constructor(dialog) {
    this.dialog = dialog;
    this.img = h('img', { class: 'lightbox-img', alt: '' });
    this.caption = h('span', { class: 'lightbox-caption' });
    const prev = h('button', { type: 'button', text: '← previous', onclick: () => this.step(-1) });
    const next = h('button', { type: 'button', text: 'next →', onclick: () => this.step(1) });
    const close = h('button', { type: 'button', class: 'primary', text: 'Close', onclick: () => this.dialog.close() });
    dialog.replaceChildren(
      h('div', { class: 'lightbox-bar' }, this.caption, prev, next, close),
      h('div', { class: 'lightbox-body' }, this.img),
    );
    dialog.addEventListener('click', (e) => {
      if (e.target === dialog) dialog.close();
    });
    dialog.addEventListener('keydown', (e) => {
      if (e.key === 'ArrowRight') this.step(1);
      if (e.key === 'ArrowLeft') this.step(-1);
    });
  }
  open(frames, i) {
    this.frames = frames.filter((f) => f.src);
    this.i = Math.max(0, this.frames.indexOf(frames[i]));
    this.show();
    if (!this.dialog.open) this.dialog.showModal();
  }
  step(d) {
    if (!this.frames?.length) return;
    this.i = (this.i + d + this.frames.length) % this.frames.length;
    this.show();
  }
  show() {
    const f = this.frames[this.i];
    this.img.src = f.src;
    this.img.width = f.width;
    this.img.height = f.height;
    this.img.alt = `frame ${this.i + 1} of ${this.frames.length}, full size`;
    this.caption.textContent = `frame ${this.i + 1} of ${this.frames.length} · ${f.width}×${f.height} px${f.chars !== null ? ` · ${fmt(f.chars)} chars` : ''}`;
  }
}
