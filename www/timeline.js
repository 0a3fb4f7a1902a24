// The timeline of a simulation: an SVG chart of the context tokens of each model request
// against the window and the compaction threshold, with a marker for each maintenance step the
// Maintainer reported (prune, compaction by method, promotion, recovery). Hovering or focusing a
// marker shows its report; clicking one calls `onSelect(marker)`.
//
// Markers come from the Maintainer's events only (`markersFromEvents`), so what the chart shows
// is what the maintainer said it did. Every marker carries data-* attributes (kind, method,
// turn, index, entry) for the tests and the curious.
import { fmt, fmtShort, h, svg } from './dom.js';

/** Marker kinds, in the order of their lanes under the chart. */
export const MARKER_KINDS = ['compaction', 'prune', 'promotion', 'recovery'];

/**
 * The chart markers of a simulation's event log: one per `prune`, per successful
 * `auto_compaction_end` (its method from the compaction result), per `promotion`, and per
 * `continue` of kind `retry` (overflow or length-stop recovery). `events` are the log's records:
 * `{turn, type, …}` as simulate.js writes them.
 */
export function markersFromEvents(events) {
  const markers = [];
  for (let i = 0; i < events.length; i++) {
    const e = events[i];
    let marker = null;
    if (e.type === 'prune') {
      marker = { kind: 'prune', method: `prune-${e.pass}`, report: e.report };
    } else if (e.type === 'auto_compaction_end' && e.compacted) {
      marker = { kind: 'compaction', method: e.method, reason: e.reason, report: e.report, entryId: e.entryId };
    } else if (e.type === 'promotion') {
      marker = { kind: 'promotion', method: 'promotion', reason: e.reason, from: e.from, to: e.to };
    } else if (e.type === 'continue' && e.kind === 'retry') {
      marker = { kind: 'recovery', method: 'retry', reason: e.recovery };
    }
    if (marker) markers.push({ ...marker, turn: e.turn, event: i, undone: e.undone === true });
  }
  return markers;
}

const LANE_H = 13;
const PAD = { left: 74, right: 14, top: 12, bottom: 22 };

/** A short description of a marker for its tooltip and title. */
export function describeMarker(m) {
  const r = m.report;
  const lines = [];
  if (m.kind === 'compaction') {
    lines.push(`Compaction (${m.method ?? 'unknown method'}, ${m.reason ?? 'automatic'}) at request ${m.turn}`);
  } else if (m.kind === 'prune') {
    lines.push(`Prune (${m.method.slice(6)} pass) at request ${m.turn}`);
  } else if (m.kind === 'promotion') {
    lines.push(`Promotion (${m.reason}) at request ${m.turn}: ${fmt(m.from)} → ${fmt(m.to)} token window`);
  } else {
    lines.push(`Recovery: retry${m.reason ? ` after ${m.reason}` : ''} at request ${m.turn}`);
  }
  if (r) {
    lines.push(`tokens ${fmt(r.tokensBefore)} → ${fmt(r.tokensAfter)} (${fmt(r.tokensAfter - r.tokensBefore)})`);
    if (m.kind === 'compaction') lines.push(`${fmt(r.entriesSummarized)} entries summarized, ${fmt(r.pruned)} pruned`);
    else if (r.pruned) lines.push(`${fmt(r.pruned)} tool results pruned`);
    if (r.shakeTokensFreed) lines.push(`shake freed ${fmt(r.shakeTokensFreed)} tokens`);
    if (r.imagesOmitted || r.framesOmitted)
      lines.push(`${fmt(r.imagesOmitted)} images, ${fmt(r.framesOmitted)} frames omitted`);
  }
  if (m.undone) lines.push('undone');
  if (m.kind === 'compaction') lines.push(m.entryId ? 'click: select it in the tree' : 'a handoff: a new session');
  return lines;
}

/**
 * The chart. `render(state)` redraws from `{turns, markers, selected}`: `turns[k]` is the record
 * of request k+1 (`promptTokens`, `window`, `threshold`, `overflow`, `contextAfter`).
 */
export class Timeline {
  constructor(container, { onSelect }) {
    this.el = container;
    this.onSelect = onSelect;
    this.root = svg('svg', { class: 'timeline-svg', role: 'img', 'aria-label': 'Context tokens per request' });
    this.tip = h('div', { class: 'timeline-tip', role: 'tooltip', hidden: true });
    this.el.replaceChildren(this.root, this.tip);
    this.markers = [];
    this.root.addEventListener('click', (event) => {
      const g = event.target.closest?.('[data-marker]');
      if (g) this.onSelect(this.markers[Number(g.dataset.marker)]);
    });
    this.root.addEventListener('keydown', (event) => {
      const g = event.target.closest?.('[data-marker]');
      if (g && (event.key === 'Enter' || event.key === ' ')) {
        event.preventDefault();
        this.onSelect(this.markers[Number(g.dataset.marker)]);
      }
    });
    const show = (event) => {
      const g = event.target.closest?.('[data-marker]');
      if (g) this.showTip(g);
    };
    this.root.addEventListener('mouseover', show);
    this.root.addEventListener('focusin', show);
    this.root.addEventListener('mouseleave', () => this.hideTip());
    this.root.addEventListener('focusout', () => this.hideTip());
  }

  showTip(g) {
    const m = this.markers[Number(g.dataset.marker)];
    if (!m) return;
    this.tip.replaceChildren(...describeMarker(m).map((line, i) => h(i ? 'div' : 'strong', { text: line })));
    this.tip.hidden = false;
    this.tip.dataset.marker = g.dataset.marker;
    const box = this.el.getBoundingClientRect();
    const r = g.getBoundingClientRect();
    const x = Math.min(r.left - box.left + 12, Math.max(0, box.width - 280));
    this.tip.style.left = `${Math.max(0, x)}px`;
    this.tip.style.top = `${r.top - box.top + 16}px`;
  }

  hideTip() {
    this.tip.hidden = true;
  }

  render({ turns, markers, selected }) {
    this.markers = markers;
    const width = Math.max(480, Math.round(this.el.clientWidth || 900));
    const lanesH = MARKER_KINDS.length * LANE_H + 6;
    const chartH = 170;
    const height = PAD.top + chartH + lanesH + PAD.bottom;
    const root = this.root;
    root.setAttribute('viewBox', `0 0 ${width} ${height}`);
    root.setAttribute('width', String(width));
    root.setAttribute('height', String(height));
    root.dataset.turns = String(turns.length);
    root.dataset.markers = String(markers.length);
    const n = Math.max(turns.length, 10);
    const plotW = width - PAD.left - PAD.right;
    const x = (turn) => PAD.left + ((turn - 0.5) / n) * plotW;
    let top = 1;
    for (const t of turns) top = Math.max(top, t.window, t.promptTokens);
    top *= 1.06;
    const y = (tokens) => PAD.top + chartH - (Math.min(tokens, top) / top) * chartH;
    const parts = [];

    // Grid and axis labels: five steps of the token scale.
    for (let k = 0; k <= 4; k++) {
      const v = (top / 4) * k;
      parts.push(svg('line', { class: 'tl-grid', x1: PAD.left, x2: width - PAD.right, y1: y(v), y2: y(v) }));
      parts.push(svg('text', { class: 'tl-axis', x: PAD.left - 6, y: y(v) + 4, 'text-anchor': 'end' }, fmtShort(v)));
    }
    const step = Math.max(1, Math.ceil(n / 10 / 10) * 10);
    // (Not under the "request →" label at the right end.)
    for (let t = step; t <= n && x(t) < width - PAD.right - 60; t += step) {
      parts.push(
        svg('text', { class: 'tl-axis', x: x(t), y: height - 6, 'text-anchor': 'middle' }, String(t)),
        svg('line', { class: 'tl-tick', x1: x(t), x2: x(t), y1: PAD.top + chartH, y2: PAD.top + chartH + 4 }),
      );
    }
    parts.push(
      svg('text', { class: 'tl-axis', x: width - PAD.right, y: height - 6, 'text-anchor': 'end' }, 'request →'),
    );

    if (turns.length) {
      // Window and threshold: step lines (a promotion moves them).
      const stepLine = (key) => {
        let d = '';
        for (let k = 0; k < turns.length; k++) {
          const v = turns[k][key];
          const x0 = x(k + 1) - plotW / n / 2;
          const x1 = x(k + 1) + plotW / n / 2;
          d += `${k ? 'L' : 'M'}${x0.toFixed(1)} ${y(v).toFixed(1)}L${x1.toFixed(1)} ${y(v).toFixed(1)}`;
        }
        return d;
      };
      parts.push(svg('path', { class: 'tl-window', d: stepLine('window'), 'data-line': 'window' }));
      parts.push(svg('path', { class: 'tl-threshold', d: stepLine('threshold'), 'data-line': 'threshold' }));
      const last = turns[turns.length - 1];
      parts.push(
        svg(
          'text',
          { class: 'tl-label window', x: PAD.left + 4, y: y(last.window) - 4 },
          `window ${fmtShort(last.window)}`,
        ),
        svg(
          'text',
          { class: 'tl-label threshold', x: PAD.left + 4, y: y(last.threshold) + 12 },
          `threshold ${fmtShort(last.threshold)}`,
        ),
      );
      // Prompt tokens of each request as the provider measured them.
      const pts = turns.map((t, k) => `${x(k + 1).toFixed(1)},${y(t.promptTokens).toFixed(1)}`).join(' ');
      parts.push(svg('polyline', { class: 'tl-tokens', points: pts }));
      // Requests the provider refused (over the window): a red dot each.
      for (let k = 0; k < turns.length; k++) {
        if (turns[k].overflow)
          parts.push(
            svg(
              'circle',
              { class: 'tl-overflow', cx: x(k + 1), cy: y(turns[k].promptTokens), r: 3.5, 'data-turn': k + 1 },
              svg('title', null, `request ${k + 1}: ${fmt(turns[k].promptTokens)} tokens, over the window`),
            ),
          );
      }
    }

    // Lanes of markers under the chart.
    const laneY = (kind) => PAD.top + chartH + 10 + MARKER_KINDS.indexOf(kind) * LANE_H;
    for (const kind of MARKER_KINDS) {
      parts.push(svg('text', { class: 'tl-lane', x: PAD.left - 6, y: laneY(kind) + 4, 'text-anchor': 'end' }, kind));
    }
    markers.forEach((m, i) => {
      const cx = x(m.turn);
      const cy = laneY(m.kind);
      const cls = [
        'tl-marker',
        m.kind,
        m.method ? `m-${m.method}` : '',
        m.undone ? 'undone' : '',
        selected === m.event ? 'selected' : '',
      ];
      const attrs = {
        class: cls.filter(Boolean).join(' '),
        tabindex: 0,
        role: 'button',
        'aria-label': describeMarker(m)[0],
        'data-marker': i,
        'data-kind': m.kind,
        'data-method': m.method ?? '',
        'data-turn': m.turn,
        'data-event': m.event,
      };
      if (m.entryId) attrs['data-entry'] = m.entryId;
      if (m.undone) attrs['data-undone'] = 'true';
      const g = svg('g', attrs);
      if (m.kind === 'compaction') {
        // A rule through the chart where it happened, and a diamond in its lane.
        g.append(svg('line', { class: 'tl-rule', x1: cx, x2: cx, y1: PAD.top, y2: cy }));
        g.append(svg('path', { d: `M${cx} ${cy - 6}L${cx + 6} ${cy}L${cx} ${cy + 6}L${cx - 6} ${cy}Z` }));
      } else if (m.kind === 'prune') {
        g.append(svg('path', { d: `M${cx - 4.5} ${cy - 4}L${cx + 4.5} ${cy - 4}L${cx} ${cy + 4}Z` }));
      } else if (m.kind === 'promotion') {
        g.append(svg('line', { class: 'tl-rule', x1: cx, x2: cx, y1: PAD.top, y2: cy }));
        g.append(svg('path', { d: `M${cx} ${cy - 6}L${cx + 5} ${cy + 4}L${cx - 5} ${cy + 4}Z` }));
      } else {
        g.append(svg('circle', { cx, cy, r: 4.5 }));
      }
      parts.push(g);
    });
    root.replaceChildren(...parts);
    if (!this.tip.hidden) {
      const g = root.querySelector(`[data-marker="${this.tip.dataset.marker}"]`);
      if (g) this.showTip(g);
      else this.hideTip();
    }
  }
}
