// Small DOM helpers shared by the explorer's modules.
//
// Session text is untrusted. Everything here builds elements with createElement and puts text
// in with textContent (or text nodes); nothing ever assigns HTML. Attribute names are chosen by
// this code only, never taken from a session.

/**
 * `h('div', { class: 'x', dataset: { row: 3 }, onclick }, 'text', child, …)`: an element.
 * Strings become text nodes; null/undefined/false children are skipped; arrays are flattened.
 */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  if (props) applyProps(el, props);
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** An SVG element with attributes (numbers and strings only). */
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  if (attrs)
    for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) el.setAttribute(k, String(v));
  append(el, children);
  return el;
}

function applyProps(el, props) {
  for (const [key, value] of Object.entries(props)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.className = value;
    else if (key === 'text') el.textContent = value;
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key === 'style') Object.assign(el.style, value);
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (key in el && typeof value !== 'string') el[key] = value;
    else el.setAttribute(key, value === true ? '' : String(value));
  }
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.append(child);
    else el.append(document.createTextNode(String(child)));
  }
}

export const $ = (id) => document.getElementById(id);

const numberFormat = new Intl.NumberFormat('en-US');
/** 12345 → "12,345". */
export const fmt = (n) => (Number.isFinite(n) ? numberFormat.format(n) : '—');

/** 12345 → "12.3k", 1234567 → "1.23M". */
export function fmtShort(n) {
  if (!Number.isFinite(n)) return '—';
  const a = Math.abs(n);
  if (a >= 1e6) return `${(n / 1e6).toFixed(a >= 1e7 ? 1 : 2)}M`;
  if (a >= 1e4) return `${(n / 1e3).toFixed(a >= 1e5 ? 0 : 1)}k`;
  if (a >= 1e3) return `${(n / 1e3).toFixed(2)}k`;
  return String(Math.round(n));
}

/** Bytes as "1.2 MB". */
export function fmtBytes(n) {
  if (n >= 1024 * 1024) return `${(n / 1024 / 1024).toFixed(1)} MB`;
  if (n >= 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${n} B`;
}

/** One line of at most `max` characters from any text (newlines and runs of spaces folded). */
export function oneLine(text, max = 160) {
  if (typeof text !== 'string') return '';
  // Only look at the head: a 5 MB string must not be scanned for a 160-character snippet.
  const head = text.length > max * 4 ? text.slice(0, max * 4) : text;
  const line = head.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}

/** Waits until the browser has painted (so a status line shows before long synchronous work). */
export function afterPaint() {
  return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
}

/**
 * Runs `step(i)` for i in [0, count) in slices of about `sliceMs`, yielding to the page between
 * slices. Resolves to true when done, false when `isCancelled()` turned true.
 */
export async function runSliced(count, step, { sliceMs = 12, isCancelled = () => false, onSlice } = {}) {
  let i = 0;
  while (i < count) {
    if (isCancelled()) return false;
    const t0 = performance.now();
    while (i < count && performance.now() - t0 < sliceMs) step(i++);
    onSlice?.(i);
    if (i < count) await yieldToPage();
  }
  return !isCancelled();
}

const channel = typeof MessageChannel === 'function' ? new MessageChannel() : null;
const waiting = [];
if (channel) channel.port1.onmessage = () => waiting.shift()?.();
/** Yields to the event loop (faster than setTimeout's 4 ms clamp). */
export function yieldToPage() {
  if (!channel) return new Promise((r) => setTimeout(r, 0));
  return new Promise((resolve) => {
    waiting.push(resolve);
    channel.port2.postMessage(0);
  });
}

/**
 * A text block that shows at most `limit` characters of `text` and offers the rest on a click
 * (a 5 MB tool result must not be laid out just because its entry was selected).
 */
export function longText(text, { limit = 20_000, className = 'text' } = {}) {
  const pre = h('pre', { class: className });
  if (typeof text !== 'string') text = String(text ?? '');
  if (text.length <= limit) {
    pre.textContent = text;
    return pre;
  }
  pre.textContent = text.slice(0, limit);
  const more = h('button', {
    class: 'link',
    type: 'button',
    text: `Show all ${fmt(text.length)} characters`,
    onclick: () => {
      pre.textContent = text;
      more.remove();
    },
  });
  return h(
    'div',
    { class: 'long-text' },
    pre,
    h('p', { class: 'muted small' }, `${fmt(text.length - limit)} more characters. `, more),
  );
}

/** JSON of a value, pretty-printed and capped; never throws (cycles, BigInt). */
export function jsonText(value, limit = 200_000) {
  let text;
  try {
    text = JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2) ?? String(value);
  } catch (err) {
    text = `(not serialisable: ${err.message})`;
  }
  return text.length > limit ? `${text.slice(0, limit)}\n… (${fmt(text.length - limit)} more characters)` : text;
}

/**
 * A virtual list: a scroll container that keeps only the rows in view (plus a margin) in the
 * DOM. `renderRow(i)` returns the row's element; rows are `rowHeight` px tall.
 */
export function virtualList(container, { count, rowHeight, renderRow, overscan = 8 }) {
  container.classList.add('vlist');
  const sizer = h('div', { class: 'vlist-sizer' });
  const layer = h('div', { class: 'vlist-rows' });
  sizer.append(layer);
  container.replaceChildren(sizer);
  let total = count;
  let scheduled = false;

  function draw() {
    scheduled = false;
    sizer.style.height = `${total * rowHeight}px`;
    const top = container.scrollTop;
    const height = container.clientHeight || 400;
    const first = Math.max(0, Math.floor(top / rowHeight) - overscan);
    const last = Math.min(total - 1, Math.ceil((top + height) / rowHeight) + overscan);
    const rows = [];
    for (let i = first; i <= last; i++) {
      const row = renderRow(i);
      row.style.top = `${i * rowHeight}px`;
      row.style.height = `${rowHeight}px`;
      row.classList.add('vlist-row');
      rows.push(row);
    }
    layer.replaceChildren(...rows);
  }
  function schedule() {
    if (scheduled) return;
    scheduled = true;
    requestAnimationFrame(draw);
  }
  container.addEventListener('scroll', schedule, { passive: true });
  draw();
  return {
    refresh: draw,
    setCount(n) {
      total = n;
      draw();
    },
    scrollToRow(i) {
      const y = i * rowHeight;
      if (y < container.scrollTop || y + rowHeight > container.scrollTop + container.clientHeight) {
        container.scrollTop = Math.max(0, y - container.clientHeight / 3);
      }
      draw();
    },
  };
}

/** A `<details>` block with a summary line and lazily built content. */
export function lazyDetails(summary, build, { open = false, className } = {}) {
  const details = h('details', { class: className });
  details.append(h('summary', { text: summary }));
  let built = false;
  const fill = () => {
    if (built || !details.open) return;
    built = true;
    details.append(build());
  };
  details.addEventListener('toggle', fill);
  if (open) {
    details.open = true;
    fill();
  }
  return details;
}

/** The error text of anything thrown: `E_CODE: message`. */
export function errorText(err) {
  if (err && typeof err === 'object') return `${err.code ? `${err.code}: ` : ''}${err.message ?? String(err)}`;
  return String(err);
}
