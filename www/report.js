// The compaction tab: the report of one compaction entry. Tokens before and after on one ruler
// (with the window and the threshold when known), tokens by kind of message after it, images
// and frames omitted, the entries it summarized (highlighted in the tree too), the snapcompact
// frames it printed, what it lost and what its anchor index kept, its summary, and Undo
// compaction (`session.undoCompaction`).
//
// The report is the Maintainer's own when the Simulate panel's run made the compaction;
// otherwise what the entry itself records (tokensBefore, tokensAfter) and the context after it.
// Summaries are session text: inserted as text only.
import { errorText, fmt, fmtShort, h, svg } from './dom.js';
import { framesGallery } from './images.js';

const KINDS = ['summary', 'user', 'assistant', 'toolResult', 'other'];

/**
 * Ids of the entries compaction `entryId` folded into its summary: on the path to it, from where
 * the previous compaction on that path kept (or the root) up to its own `firstKeptEntryId`,
 * compaction entries themselves left out.
 */
export function summarizedEntries(session, entryId) {
  const entry = session.entry(entryId);
  if (entry?.type !== 'compaction' || !entry.parentId) return [];
  const path = session.pathTo(entry.parentId);
  let end = path.indexOf(entry.firstKeptEntryId);
  if (end < 0) end = path.length;
  let start = 0;
  for (let i = end - 1; i >= 0; i--) {
    const e = session.entry(path[i]);
    if (e?.type === 'compaction') {
      const kept = path.indexOf(e.firstKeptEntryId);
      start = kept >= 0 && kept < end ? kept : i + 1;
      break;
    }
  }
  return path.slice(start, end).filter((id) => session.entry(id)?.type !== 'compaction');
}

/** One horizontal ruler: before and after bars on one scale, window and threshold rules. */
function ruler({ before, after, window, threshold }) {
  const W = 420;
  const top = Math.max(before, after, window ?? 0, 1) * 1.04;
  const x = (v) => 4 + (v / top) * (W - 8);
  const bar = (y, v, cls, label) => [
    svg('rect', { class: `rp-bar ${cls}`, x: 4, y, width: Math.max(1, x(v) - 4), height: 16, rx: 2 }),
    svg('text', { class: 'rp-text', x: Math.min(x(v) + 4, W - 90), y: y + 12 }, `${label} ${fmt(v)}`),
  ];
  const parts = [...bar(4, before, 'before', 'before'), ...bar(26, after, 'after', 'after')];
  if (window) {
    parts.push(svg('line', { class: 'rp-window', x1: x(window), x2: x(window), y1: 0, y2: 50 }));
    parts.push(
      svg('text', { class: 'rp-note', x: x(window) - 2, y: 60, 'text-anchor': 'end' }, `window ${fmtShort(window)}`),
    );
  }
  if (threshold) {
    parts.push(svg('line', { class: 'rp-threshold', x1: x(threshold), x2: x(threshold), y1: 0, y2: 50 }));
    parts.push(svg('text', { class: 'rp-note', x: x(threshold) + 2, y: 60 }, `threshold ${fmtShort(threshold)}`));
  }
  return svg(
    'svg',
    { class: 'rp-ruler', viewBox: `0 0 ${W} 64`, width: W, height: 64, 'data-before': before, 'data-after': after },
    ...parts,
  );
}

/** A stacked bar of tokens by kind, with a legend. */
function byKind(tokensByKind) {
  const total = KINDS.reduce((n, k) => n + (tokensByKind[k] ?? 0), 0) || 1;
  const W = 420;
  let x = 4;
  const parts = [];
  for (const k of KINDS) {
    const v = tokensByKind[k] ?? 0;
    if (!v) continue;
    const w = ((W - 8) * v) / total;
    parts.push(
      svg(
        'rect',
        { class: `rp-kind k-${k}`, x, y: 2, width: Math.max(1, w), height: 14 },
        svg('title', null, `${k}: ${fmt(v)}`),
      ),
    );
    x += w;
  }
  const legend = h(
    'ul',
    { class: 'rp-legend small' },
    KINDS.map((k) => h('li', null, h('span', { class: `swatch k-${k}` }), `${k} ${fmt(tokensByKind[k] ?? 0)}`)),
  );
  return [svg('svg', { class: 'rp-kinds', viewBox: `0 0 ${W} 18`, width: W, height: 18 }, ...parts), legend];
}

/** Identifiers as a wrapped list of monospace chips (the first `max`, then a count). */
function chips(list, cls, max = 60) {
  const p = h('p', { class: `rp-chips small ${cls}` });
  for (const text of list.slice(0, max)) p.append(h('code', { class: 'rp-chip', text }), ' ');
  if (list.length > max) p.append(h('span', { class: 'muted', text: `… and ${fmt(list.length - max)} more` }));
  return p;
}

/**
 * The loss report (issue 38): the identifiers of the dropped region the model no longer sees
 * anywhere (`lost`), and those the anchor index kept for it (`anchored`). A compaction read from
 * the file has no report: the anchors its entry carries in `details.anchors` stand in.
 */
function lossSection(report, entry) {
  if (Array.isArray(report.lost) && Array.isArray(report.anchored)) {
    return [
      h('h4', { text: `Lost (${fmt(report.lost.length)})` }),
      report.lost.length
        ? chips(report.lost, 'rp-lost')
        : h('p', {
            class: 'muted small rp-lost',
            text: 'Nothing: every identifier of the dropped region is still in view.',
          }),
      h('h4', { text: `Anchored (${fmt(report.anchored.length)})` }),
      report.anchored.length
        ? chips(report.anchored, 'rp-anchored')
        : h('p', { class: 'muted small rp-anchored', text: 'No identifier needed the anchor block.' }),
    ];
  }
  const carried = entry.details?.anchors;
  if (!Array.isArray(carried) || carried.length === 0) return [];
  const texts = carried.map((a) => (typeof a?.text === 'string' ? a.text : '')).filter(Boolean);
  return [h('h4', { text: `Anchors carried (${fmt(texts.length)})` }), chips(texts, 'rp-anchored')];
}

/**
 * Renders the report of compaction `entryId` into `panel`.
 * @param app the explorer: session, sim (the Simulate panel's run, if any), contextTokens,
 *   undoCompaction(entryId), selectEntry(id), scope, lightbox
 */
export function renderCompactionPanel(panel, app, entryId) {
  const { session } = app;
  const entry = entryId ? session.entry(entryId) : undefined;
  if (entry?.type !== 'compaction') {
    panel.replaceChildren(
      h('p', {
        class: 'muted',
        text: 'Select a compaction: a ◆ in the tree, or a compaction marker on the Simulate timeline.',
      }),
    );
    return;
  }
  const fromSim = app.sim?.reportFor(entryId);
  let report = fromSim?.report;
  if (!report) {
    // The figures of the states before and after it, as the header and the Context tab show them
    // (the core's estimate); the entry's own `tokensBefore` is the usage reported before it.
    const estimate = (id) => {
      try {
        return id ? app.contextTokens(id).estimatedTokens : 0;
      } catch {
        return NaN;
      }
    };
    const after = estimate(entryId);
    const tokensByKind = null;
    report = {
      method: entry.method ?? null,
      tokensBefore: estimate(entry.parentId),
      tokensAfter: after,
      tokensByKind,
      entriesSummarized: NaN,
      imagesOmitted: NaN,
      framesOmitted: NaN,
      pruned: NaN,
      shakeTokensFreed: 0,
    };
  }
  const summarized = summarizedEntries(session, entryId);
  const turn = fromSim ? app.sim.turns[fromSim.turn - 1] : null;
  const out = [];
  out.push(
    h('h3', { text: `Compaction ${entryId}` }),
    h(
      'p',
      { class: 'muted small' },
      `method ${report.method ?? entry.method ?? 'unknown'}`,
      fromSim ? ` · ${fromSim.reason} · request ${fromSim.turn} of the simulation` : ' · from the file',
      entry.fromExtension ? ' · from an extension' : '',
    ),
  );
  if (entry.warning) out.push(h('p', { class: 'warn small', text: entry.warning }));

  // Undo: only the latest step, while the leaf is still on the compaction.
  const canUndo = typeof session.undoCompaction === 'function' && session.leafId === entryId;
  const undo = h('button', {
    type: 'button',
    id: 'undo-compaction',
    text: 'Undo compaction',
    disabled: !canUndo,
    title: canUndo
      ? 'The leaf goes back to where it was before this compaction; nothing is deleted'
      : 'Only the latest compaction can be undone, while the leaf is still on it',
    onclick: () => app.undoCompaction(entryId),
  });
  let why = null;
  if (fromSim?.undone) why = ' undone: the leaf went back to where it was before it';
  else if (!canUndo) why = ' the leaf has moved on since: only the latest step can be undone';
  out.push(h('div', { class: 'rp-actions' }, undo, why ? h('span', { class: 'muted small', text: why }) : null));

  out.push(h('h4', { text: 'Tokens before and after' }));
  const rulerSvg = ruler({
    before: report.tokensBefore,
    after: report.tokensAfter,
    window: turn?.window,
    threshold: turn?.threshold,
  });
  out.push(rulerSvg);
  out.push(
    h(
      'p',
      { class: 'small', id: 'rp-numbers' },
      `${fmt(report.tokensBefore)} → ${fmt(report.tokensAfter)} tokens (${fmt(report.tokensAfter - report.tokensBefore)})`,
    ),
  );
  if (!fromSim && Number.isFinite(entry.tokensBefore) && entry.tokensBefore !== report.tokensBefore) {
    out.push(
      h('p', {
        class: 'muted small',
        text: `The entry records tokensBefore ${fmt(entry.tokensBefore)}: the usage last reported before it, not the estimate above.`,
      }),
    );
  }

  if (report.tokensByKind) {
    out.push(h('h4', { text: 'Tokens by kind, after' }), ...byKind(report.tokensByKind));
  }

  const facts = h('dl', { class: 'rp-facts' });
  const fact = (k, v) => facts.append(h('div', null, h('dt', { text: k }), h('dd', { text: v })));
  fact(
    'entries summarized',
    Number.isFinite(report.entriesSummarized)
      ? fmt(report.entriesSummarized)
      : `${fmt(summarized.length)} (on the path)`,
  );
  fact('tool results pruned', Number.isFinite(report.pruned) ? fmt(report.pruned) : '—');
  fact('images omitted', Number.isFinite(report.imagesOmitted) ? fmt(report.imagesOmitted) : '—');
  fact('frames omitted', Number.isFinite(report.framesOmitted) ? fmt(report.framesOmitted) : '—');
  if (report.shakeTokensFreed) fact('shake freed', fmt(report.shakeTokensFreed));
  fact('first kept entry', entry.firstKeptEntryId);
  out.push(facts);

  // The entries it folded: highlighted in the tree; the first few listed here.
  out.push(h('h4', { text: `Summarized entries (${fmt(summarized.length)})` }));
  if (summarized.length) {
    const list = h('p', { class: 'rp-summarized small' });
    for (const id of summarized.slice(0, 40)) {
      list.append(
        h('button', { type: 'button', class: 'link mono', text: id, onclick: () => app.selectEntry(id) }),
        ' ',
      );
    }
    if (summarized.length > 40)
      list.append(h('span', { class: 'muted', text: `… and ${fmt(summarized.length - 40)} more` }));
    out.push(list, h('p', { class: 'muted small', text: 'They are highlighted in the tree.' }));
  }

  out.push(...lossSection(report, entry));

  const frames = entry.preserveData?.snapcompact?.frames;
  if (Array.isArray(frames) && frames.length) {
    try {
      out.push(framesGallery(frames, app.scope, { title: 'snapcompact frames', lightbox: app.lightbox }));
    } catch (err) {
      out.push(h('p', { class: 'error', text: `Could not show the frames: ${errorText(err)}` }));
    }
  }
  out.push(h('h4', { text: 'Summary' }), h('pre', { class: 'rp-summary', text: entry.summary ?? '' }));
  panel.replaceChildren(...out);
}
