// The tree view: one row per segment (see model.js), lanes drawn in SVG, node cards as HTML.
// Only the rows in view (plus a margin) exist in the DOM, so a 50,000-entry session or a
// 100,000-deep chain scrolls like a short one. Card text comes from the session and is set
// with textContent only.
import { fmt, fmtShort, h, oneLine, svg } from './dom.js';
import { entryMeta, entrySnippet } from './entry.js';
import {
  childCountOf,
  KIND_BRANCH_SUMMARY,
  KIND_COMPACTION,
  segComposition,
  segEntry,
  segLast,
  segLength,
  segPick,
} from './model.js';

const ZOOMS = [0.6, 0.8, 1, 1.25];
const BASE_ROW = 44;
const BASE_LANE = 18;
const OVERSCAN = 6;

export class TreeView {
  /**
   * @param {HTMLElement} container the scroll container
   * @param {{ onSelect: (seg: number, entryId?: string) => void, cardEntry?: (id: string) => object | undefined }} handlers
   *   `cardEntry`: what a card shows of an entry the page already holds a light copy of (a
   *   snapcompact compaction without its megabytes of frames), instead of the whole entry
   */
  constructor(container, handlers) {
    this.el = container;
    this.handlers = handlers;
    this.zoomIndex = 2;
    this.sizer = h('div', { class: 'tree-sizer' });
    this.graph = svg('svg', { class: 'tree-graph', 'aria-hidden': 'true' });
    this.cards = h('div', { class: 'tree-cards' });
    this.sizer.append(this.graph, this.cards);
    this.el.replaceChildren(this.sizer);
    this.scheduled = false;
    this.snippets = new Map();
    this.el.addEventListener('scroll', () => this.schedule(), { passive: true });
    new ResizeObserver(() => this.schedule()).observe(this.el);
    this.el.addEventListener('click', (event) => this.onClick(event));
    this.el.addEventListener('keydown', (event) => this.onKey(event));
  }

  get rowH() {
    return Math.round(BASE_ROW * ZOOMS[this.zoomIndex]);
  }

  /** Lane spacing: narrower when a tree is very wide, so cards stay near their lines. */
  get laneW() {
    const z = ZOOMS[this.zoomIndex];
    const lanes = this.tree?.maxLanes ?? 1;
    return Math.max(3, Math.min(BASE_LANE * z, (480 * z) / lanes));
  }

  zoom(delta) {
    const next = Math.max(0, Math.min(ZOOMS.length - 1, this.zoomIndex + delta));
    if (next === this.zoomIndex) return;
    // Keep the row at the top of the view in place.
    const row = this.el.scrollTop / this.rowH;
    this.zoomIndex = next;
    this.el.dataset.zoom = String(next);
    this.el.scrollTop = row * this.rowH;
    this.draw();
  }

  /**
   * New data (any subset): session, tree, path, tally, labels, selection {seg, entryId},
   * contextWindow, highlight (a Set of segments to mark as summarized, or null).
   */
  setData(state) {
    if (state.tree !== this.tree) this.snippets.clear();
    Object.assign(this, state);
    this.schedule();
  }

  /** Only the selection changed. */
  setSelection(selection) {
    this.selection = selection;
    this.schedule();
  }

  schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => this.draw());
  }

  /** Sets the scrollable size (rows × row height, lanes + card width). */
  size() {
    const { tree } = this;
    if (!tree) return;
    this.sizer.style.height = `${tree.segCount * this.rowH + 24}px`;
    this.sizer.style.width = `${this.laneX(tree.maxLanes) + 640}px`;
  }

  /** Scrolls row `s` into view (centred when it was out of view). */
  reveal(s) {
    if (!this.tree) return;
    this.size();
    const y = s * this.rowH;
    const top = this.el.scrollTop;
    const height = this.el.clientHeight;
    if (y < top || y + this.rowH > top + height) this.el.scrollTop = Math.max(0, y - height / 3);
    const x = this.cardX(s);
    if (x < this.el.scrollLeft || x > this.el.scrollLeft + this.el.clientWidth - 200) {
      this.el.scrollLeft = Math.max(0, x - 80);
    }
    this.schedule();
  }

  laneX(lane) {
    return 16 + lane * this.laneW;
  }

  cardX(s) {
    return this.laneX(this.tree.rowWidth[s] - 1) + Math.max(14, this.laneW);
  }

  draw() {
    this.scheduled = false;
    const { tree } = this;
    if (!tree) return;
    const rowH = this.rowH;
    this.size();
    const top = this.el.scrollTop;
    const viewH = this.el.clientHeight || 600;
    const left = this.el.scrollLeft;
    const viewW = this.el.clientWidth || 800;
    const a = Math.max(0, Math.floor(top / rowH) - OVERSCAN);
    const b = Math.min(tree.segCount - 1, Math.ceil((top + viewH) / rowH) + OVERSCAN);
    this.firstRow = a;
    this.lastRow = b;
    if (b < a) {
      this.graph.replaceChildren();
      this.cards.replaceChildren(h('p', { class: 'tree-empty muted', text: 'No entries.' }));
      return;
    }
    this.drawGraph(a, b, left, viewW);
    this.drawCards(a, b);
  }

  drawGraph(a, b, left, viewW) {
    const { tree, rowH } = this;
    const y0 = a * rowH;
    const h0 = (b - a + 1) * rowH;
    const x0 = Math.max(0, left - 40);
    const x1 = left + viewW + 40;
    this.graph.setAttribute('width', String(x1 - x0));
    this.graph.setAttribute('height', String(h0));
    this.graph.setAttribute('viewBox', `${x0} ${y0} ${x1 - x0} ${h0}`);
    this.graph.style.transform = `translate(${x0}px, ${y0}px)`;
    const mid = (s) => s * rowH + rowH / 2;
    const onPath = this.path?.onPath;
    const plain = [];
    const active = [];
    // Edges into segments c >= a whose parent row is <= b (see model.js suffixMinParent).
    for (let c = a; c < tree.segCount && tree.suffixMinParent[c] <= b; c++) {
      const p = tree.segParent[c];
      if (p < 0 || p > b) continue;
      const xp = this.laneX(tree.segLane[p]);
      const xc = this.laneX(tree.segLane[c]);
      if (Math.max(xp, xc) < x0 || Math.min(xp, xc) > x1) continue;
      const yp = mid(p);
      const yc = mid(c);
      let d;
      if (xp === xc) d = `M${xp} ${yp}V${yc}`;
      else {
        const yb = yp + rowH / 2;
        d = `M${xp} ${yp}C${xp} ${yb} ${xc} ${yp} ${xc} ${yb}V${yc}`;
      }
      (onPath?.[c] && onPath[p] ? active : plain).push(d);
    }
    const children = [];
    if (plain.length) children.push(svg('path', { class: 'edge', d: plain.join('') }));
    if (active.length) children.push(svg('path', { class: 'edge active', d: active.join('') }));
    const r = Math.max(3.5, rowH / 8);
    for (let s = a; s <= b; s++) {
      const x = this.laneX(tree.segLane[s]);
      if (x < x0 || x > x1) continue;
      const y = mid(s);
      const kind = tree.segKind[s];
      const on = onPath?.[s] ? ' on-path' : '';
      const sel = `${this.selection?.seg === s ? ' selected' : ''}${this.highlight?.has(s) ? ' summarized' : ''}`;
      let shape;
      if (kind === KIND_COMPACTION) {
        const q = r * 1.45;
        shape = svg('path', {
          class: `glyph compaction${on}${sel}`,
          d: `M${x} ${y - q}L${x + q} ${y}L${x} ${y + q}L${x - q} ${y}Z`,
        });
      } else if (kind === KIND_BRANCH_SUMMARY) {
        const q = r * 1.15;
        shape = svg('rect', {
          class: `glyph branch-summary${on}${sel}`,
          x: x - q,
          y: y - q,
          width: 2 * q,
          height: 2 * q,
          rx: 2,
        });
      } else {
        shape = svg('circle', { class: `glyph run${on}${sel}`, cx: x, cy: y, r });
      }
      children.push(shape);
      if (this.path?.leafSeg === s) children.push(svg('circle', { class: 'leaf-ring', cx: x, cy: y, r: r + 3.5 }));
    }
    this.graph.replaceChildren(...children);
  }

  drawCards(a, b) {
    const { rowH } = this;
    const cards = [];
    for (let s = a; s <= b; s++) cards.push(this.card(s, rowH));
    this.cards.replaceChildren(...cards);
  }

  /** The HTML card of segment `s`. */
  card(s, rowH) {
    const { tree, path, tally, labels, selection } = this;
    const kind = tree.segKind[s];
    const n = segLength(tree, s);
    const first = segEntry(tree, s, 0);
    const last = segLast(tree, s);
    const forks = childCountOf(tree, last);
    const classes = ['node', `kind-${kind}`];
    if (path?.onPath[s]) classes.push('on-path');
    if (selection?.seg === s) classes.push('selected');
    // Entries the compaction of the Compaction tab folded into its summary.
    if (this.highlight?.has(s)) classes.push('summarized');
    const card = h('div', {
      class: classes.join(' '),
      dataset: { row: s, kind, entries: n },
      role: 'button',
      'aria-label': `${kindName(kind)} ${tree.index[first].id}`,
    });
    if (forks > 1) card.dataset.branch = String(forks);
    card.style.top = `${s * rowH + 3}px`;
    card.style.left = `${this.cardX(s)}px`;
    card.style.height = `${rowH - 6}px`;

    const head = h('div', { class: 'node-head' });
    const title = h('span', { class: 'node-title' });
    if (kind === KIND_COMPACTION) title.textContent = 'Compaction';
    else if (kind === KIND_BRANCH_SUMMARY) title.textContent = 'Branch summary';
    else title.textContent = n === 1 ? describeOne(tree.index[first]) : `${fmt(n)} entries`;
    head.append(title);
    if (kind === 'run' && n > 1) {
      const c = segComposition(tree, s);
      const parts = [];
      if (c.user) parts.push(`${fmt(c.user)} user`);
      if (c.assistant) parts.push(`${fmt(c.assistant)} assistant`);
      if (c.tool) parts.push(`${fmt(c.tool)} tool`);
      if (c.other) parts.push(`${fmt(c.other)} other`);
      head.append(h('span', { class: 'node-meta', text: parts.join(' · ') }));
    }
    head.append(h('span', { class: 'node-meta muted', text: `#${tree.index[first].line}` }));
    if (forks > 1)
      head.append(h('span', { class: 'badge fork', title: `${forks} branches start here`, text: `⑂ ${forks}` }));
    if (path?.leafSeg === s) {
      card.dataset.leaf = 'true';
      const where = n > 1 && path.leafPos !== n - 1 ? ` @ ${fmt(path.leafPos + 1)}/${fmt(n)}` : '';
      head.append(h('span', { class: 'badge leaf', text: `leaf${where}` }));
    }
    // Token bar: the segment's estimate against the chosen context window.
    const tokens = tally?.segDone[s] ? tally.seg[s] : NaN;
    const bar = h('span', {
      class: 'tokbar',
      title: Number.isNaN(tokens) ? 'counting tokens…' : `${fmt(tokens)} estimated tokens`,
    });
    const fillEl = h('span', { class: 'tokbar-fill' });
    if (!Number.isNaN(tokens))
      fillEl.style.width = `${Math.min(100, (100 * tokens) / (this.contextWindow || 200_000))}%`;
    else bar.classList.add('pending');
    bar.append(fillEl);
    head.append(bar, h('span', { class: 'node-tokens', text: Number.isNaN(tokens) ? '…' : `${fmtShort(tokens)} tok` }));
    card.append(head);

    if (rowH >= 30) {
      const line = h('div', { class: 'node-line' });
      const { snippet, meta } = this.info(s);
      if (meta) line.append(h('span', { class: 'node-meta strong', text: meta }));
      if (snippet) line.append(h('span', { class: 'snippet', text: snippet }));
      // Labels of entries in this segment: each one a tag that selects its entry.
      if (labels) {
        let shown = 0;
        for (const [id, label] of this.segLabels(s)) {
          if (shown++ >= 3) {
            line.append(h('span', { class: 'tag more', text: '…' }));
            break;
          }
          line.append(
            h('span', { class: 'tag', dataset: { entry: id }, title: `label on ${id}`, text: oneLine(label, 40) }),
          );
        }
      }
      card.append(line);
    }
    return card;
  }

  /** Labels whose target is in segment `s` (memoised per data set). */
  segLabels(s) {
    if (!this.labelsBySeg || this.labelsBySegFor !== this.labels) {
      this.labelsBySeg = new Map();
      this.labelsBySegFor = this.labels;
      for (const [id, label] of Object.entries(this.labels ?? {})) {
        const o = this.tree.ord.get(id);
        if (o === undefined) continue;
        const seg = this.tree.entrySeg[o];
        if (!this.labelsBySeg.has(seg)) this.labelsBySeg.set(seg, []);
        this.labelsBySeg.get(seg).push([id, label]);
      }
    }
    return this.labelsBySeg.get(s) ?? [];
  }

  /** A one-line description of the segment's content (first user text, summary), cached. */
  info(s) {
    if (this.snippets.has(s)) return this.snippets.get(s);
    const { tree, session } = this;
    let text = '';
    let meta = '';
    try {
      const pick = segPick(tree, s);
      const id = tree.index[pick].id;
      // A light copy when the page has one: reading a 2 MB compaction here would hold a frame.
      const entry = this.handlers.cardEntry?.(id) ?? session.entry(id);
      text = entry ? entrySnippet(entry, 140) : '';
      meta = entry ? entryMeta(entry) : '';
    } catch {
      text = '';
    }
    const info = { snippet: text, meta };
    this.snippets.set(s, info);
    return info;
  }

  onClick(event) {
    const tag = event.target.closest?.('[data-entry]');
    const card = event.target.closest?.('[data-row]');
    if (!card || !this.el.contains(card)) return;
    const s = Number(card.dataset.row);
    this.handlers.onSelect(s, tag?.dataset.entry);
    this.el.focus({ preventScroll: true });
  }

  onKey(event) {
    if (!this.tree) return;
    const s = this.selection?.seg ?? -1;
    let next = null;
    if (event.key === 'ArrowDown' || event.key === 'j') next = Math.min(this.tree.segCount - 1, s + 1);
    else if (event.key === 'ArrowUp' || event.key === 'k') next = Math.max(0, s - 1);
    else if (event.key === 'Home') next = 0;
    else if (event.key === 'End') next = this.tree.segCount - 1;
    else if (event.key === 'ArrowLeft' && s >= 0 && this.tree.segParent[s] >= 0) next = this.tree.segParent[s];
    else if (event.key === 'PageDown')
      next = Math.min(this.tree.segCount - 1, s + Math.floor(this.el.clientHeight / this.rowH));
    else if (event.key === 'PageUp') next = Math.max(0, s - Math.floor(this.el.clientHeight / this.rowH));
    if (next === null || next < 0) return;
    event.preventDefault();
    this.handlers.onSelect(next);
    this.reveal(next);
  }
}

function kindName(kind) {
  if (kind === KIND_COMPACTION) return 'compaction';
  if (kind === KIND_BRANCH_SUMMARY) return 'branch summary';
  return 'run';
}

function describeOne(info) {
  if (info.type === 'message') return info.role ?? 'message';
  return info.type.replaceAll('_', ' ');
}
