// The context view: what the LLM would be sent for a leaf (`Session.buildContext`), split into
// the compaction summary, the kept region and what came after, with pruned tool results marked
// and the totals against a chosen context window and compaction threshold. The display
// transcript (`transcript: true`) shows everything, with the messages the LLM no longer sees
// dimmed.
import { errorText, fmt, fmtShort, h, runSliced, virtualList } from './dom.js';
import { messageSnippet } from './entry.js';
import { estimateTokens, reserveTokens, shouldCompact, thresholdTokens } from './pkg/entries/web.js';

export const WINDOWS = [32_000, 128_000, 200_000, 272_000, 400_000, 1_000_000];
/** Above this many messages the list is built on request (50,000 messages take seconds). */
const EAGER_LIMIT = 5_000;
const ROW = 28;

/** Compaction settings from the view's controls (invalid input → defaults, with the error shown). */
export function thresholdSettings(settings) {
  const out = {};
  if (Number.isFinite(settings.thresholdPercent) && settings.thresholdPercent > 0)
    out.thresholdPercent = settings.thresholdPercent;
  if (Number.isFinite(settings.reserveTokens) && settings.reserveTokens >= 0)
    out.reserveTokens = settings.reserveTokens;
  return out;
}

/**
 * Renders the context view for `leafId` into `panel`. `ctx` holds session, tree, settings,
 * onSettings(patch), contextTokens(leafId) and actions {selectEntry, branch}. Returns a function
 * cancelling the background work it started.
 */
export function renderContextPanel(panel, ctx, leafId, { force = false } = {}) {
  const { session, tree, settings } = ctx;
  let cancelled = false;
  const parts = [];
  parts.push(controls(ctx));

  const isLeaf = leafId === session.leafId;
  const where = h('p', { class: 'context-where' });
  where.append(
    'Context at ',
    h('code', { text: leafId ?? '(empty)' }),
    isLeaf ? ' — the session leaf' : ' — not the session leaf ',
  );
  if (!isLeaf && leafId)
    where.append(
      h('button', {
        type: 'button',
        class: 'link',
        text: 'make it the leaf',
        onclick: () => ctx.actions.branch(leafId),
      }),
    );
  parts.push(where);

  let tokens;
  try {
    tokens = ctx.contextTokens ? ctx.contextTokens(leafId) : session.contextTokens({ leafId });
  } catch (err) {
    parts.push(h('p', { class: 'error', text: errorText(err) }));
    panel.replaceChildren(...parts);
    return () => {};
  }
  // One figure per state, the one the header and the compaction reports show: the core's local
  // estimate of what the context holds (`estimatedTokens`, = `contextStats().tokens`). A
  // provider's reported usage is shown beside it, and only when it was reported after the
  // latest compaction on the path: before it, it measured the history the compaction replaced.
  const figure = tokens.estimatedTokens;
  const usage = tokens.usageIsCurrent ? tokens : null;
  const win = settings.contextWindow;
  const thSettings = thresholdSettings(settings);
  let threshold;
  let reserve;
  let compactNow;
  try {
    threshold = thresholdTokens(win, thSettings);
    reserve = reserveTokens(win, thSettings);
    compactNow = shouldCompact(figure, win, thSettings);
  } catch (err) {
    parts.push(h('p', { class: 'error', text: `Settings: ${errorText(err)}` }));
    threshold = thresholdTokens(win);
    reserve = reserveTokens(win);
    compactNow = shouldCompact(figure, win);
  }

  const summary = h('div', { class: 'context-summary' });
  const gauge = h('div', { class: 'gauge', role: 'img' });
  const totals = h('dl', { class: 'totals' });
  summary.append(gauge, totals);
  parts.push(summary);

  const addTotal = (name, value, id) => {
    const dd = h('dd', { text: value });
    if (id) dd.id = id;
    totals.append(h('dt', { text: name }), dd);
    return dd;
  };
  addTotal('messages', fmt(tokens.messages), 'ctx-messages');
  const estimated = addTotal('context tokens (est.)', fmt(figure), 'ctx-tokens');
  if (figure > win) {
    estimated.textContent += ' — more than the window';
    estimated.className = 'warn';
  }
  addTotal(
    'reported usage',
    usage
      ? `${fmt(usage.usageTokens)} at ${usage.lastUsageEntryId} (+ ${fmt(usage.trailingTokens)} estimated after)`
      : tokens.lastUsageEntryId === null
        ? 'none on the path'
        : 'none since the last compaction',
    'ctx-usage',
  );
  addTotal('threshold', `${fmt(threshold)} of ${fmt(win)} (reserve ${fmt(reserve)})`, 'ctx-threshold');
  const verdict = addTotal(
    'compaction',
    compactNow ? 'due: over the threshold' : `not due (${fmt(Math.max(0, threshold - figure))} tokens to go)`,
    'ctx-verdict',
  );
  verdict.className = compactNow ? 'warn' : 'ok';
  const regionDd = addTotal('by region', '…', 'ctx-regions');

  const listBox = h('div', { class: 'context-list', 'aria-label': 'context messages' });
  const listHead = h('div', { class: 'context-list-head' });
  parts.push(listHead, listBox);
  panel.replaceChildren(...parts);
  drawGauge(gauge, { win, threshold, tokens: figure, regions: null });

  const transcript = !!settings.transcript;
  const pathLength = leafId ? tree.depth[tree.ord.get(leafId)] + 1 : 0;
  const size = transcript ? pathLength : tokens.messages;
  if (size > EAGER_LIMIT && !force) {
    listHead.append(
      h(
        'p',
        { class: 'muted' },
        `${fmt(size)} ${transcript ? 'entries on the path' : 'messages'}: listing them converts the whole context to JavaScript and may take a few seconds. `,
      ),
      h('button', {
        type: 'button',
        text: `List ${fmt(size)} messages`,
        onclick: () => renderContextPanel(panel, ctx, leafId, { force: true }),
      }),
    );
    regionDd.textContent = '(list the messages to see them)';
    listBox.remove();
    return () => {};
  }

  let built;
  let llmIds = null;
  try {
    built = session.buildContext({ leafId, transcript });
    if (transcript) llmIds = new Set(session.buildContext({ leafId }).entryIds);
  } catch (err) {
    listHead.append(h('p', { class: 'error', text: errorText(err) }));
    return () => {};
  }
  const { messages, entryIds } = built;
  const compactionId = transcript ? findCompaction(session, leafId) : built.compactionId;
  const compactionDepth = compactionId && tree.ord.has(compactionId) ? tree.depth[tree.ord.get(compactionId)] : -1;

  // Region of each message: summary, kept (before the compaction entry), new (after it),
  // history (no compaction), hidden (transcript only: not sent to the LLM).
  const region = new Array(messages.length);
  for (let i = 0; i < messages.length; i++) {
    const id = entryIds[i];
    const m = messages[i];
    if (llmIds && !llmIds.has(id)) region[i] = 'hidden';
    else if (m?.role === 'compactionSummary') region[i] = 'summary';
    else if (compactionDepth < 0) region[i] = 'history';
    else {
      const o = tree.ord.get(id);
      region[i] = o !== undefined && tree.depth[o] < compactionDepth ? 'kept' : 'new';
    }
  }
  const pruned = messages.map((m) => m?.role === 'toolResult' && !!m.prunedAt);
  const counts = { summary: 0, kept: 0, new: 0, history: 0, hidden: 0, pruned: 0 };
  for (let i = 0; i < messages.length; i++) {
    counts[region[i]]++;
    if (pruned[i]) counts.pruned++;
  }

  const legend = h('div', { class: 'legend small' });
  const facts = [];
  if (compactionId)
    facts.push(
      `compaction ${compactionId}, first kept entry ${built.firstKeptEntryId ?? findFirstKept(session, compactionId) ?? '?'}`,
    );
  else facts.push('no compaction on this path');
  if (counts.pruned) facts.push(`${fmt(counts.pruned)} pruned tool result${counts.pruned === 1 ? '' : 's'}`);
  if (transcript)
    facts.push(`${fmt(counts.hidden)} of ${fmt(messages.length)} transcript messages are not sent to the LLM`);
  const keys = compactionId
    ? [
        ['summary', 'summary'],
        ['kept', 'kept'],
        ['new', 'after compaction'],
      ]
    : [['new', 'history']];
  if (transcript) keys.push(['hidden', 'not sent']);
  if (counts.pruned) keys.push(['pruned', 'pruned']);
  for (const [key, text] of keys) legend.append(h('span', { class: `region-key ${key}`, text }));
  listHead.append(legend, h('p', { class: 'muted small context-facts', text: facts.join(' · ') }));

  // Per-message estimates, computed in slices (they feed the gauge and the region totals).
  const est = new Float64Array(messages.length).fill(NaN);
  const list = virtualList(listBox, {
    count: messages.length,
    rowHeight: ROW,
    renderRow: (i) => {
      const m = messages[i];
      const r = region[i];
      const prev = i > 0 ? region[i - 1] : null;
      const row = h(
        'div',
        {
          class: `ctx-row region-${r}${pruned[i] ? ' pruned' : ''}${prev && prev !== r ? ' boundary' : ''}`,
          dataset: { entry: entryIds[i], region: r },
        },
        h('span', { class: 'num muted', text: String(i + 1) }),
        h('span', {
          class: `role role-${m?.role}`,
          text: m?.role === 'compactionSummary' ? 'summary' : String(m?.role ?? '?'),
        }),
        h('span', { class: 'snippet', text: messageSnippet(m, 140) }),
        pruned[i] ? h('span', { class: 'badge pruned', text: 'pruned' }) : null,
        h('span', { class: 'num', text: Number.isNaN(est[i]) ? '…' : fmtShort(est[i]) }),
      );
      if (prev && prev !== r)
        row.title = r === 'kept' ? 'kept region starts here' : r === 'new' ? 'after the compaction' : '';
      return row;
    },
  });
  listBox.addEventListener('click', (event) => {
    const row = event.target.closest('[data-entry]');
    if (row) ctx.actions.selectEntry(row.dataset.entry);
  });

  const sums = { summary: 0, kept: 0, new: 0, history: 0, hidden: 0, pruned: 0 };
  runSliced(
    messages.length,
    (i) => {
      let t = 0;
      try {
        t = estimateTokens(messages[i]);
      } catch {
        t = 0;
      }
      est[i] = t;
      sums[region[i]] += t;
      if (pruned[i]) sums.pruned += t;
    },
    { isCancelled: () => cancelled },
  ).then((done) => {
    if (!done) return;
    const partsText = [];
    if (counts.summary) partsText.push(`summary ${fmt(sums.summary)}`);
    if (counts.kept) partsText.push(`kept ${fmt(sums.kept)} (${fmt(counts.kept)} msgs)`);
    if (counts.new) partsText.push(`after ${fmt(sums.new)} (${fmt(counts.new)} msgs)`);
    if (counts.history) partsText.push(`history ${fmt(sums.history)} (${fmt(counts.history)} msgs)`);
    if (counts.hidden) partsText.push(`not sent ${fmt(sums.hidden)}`);
    if (counts.pruned) partsText.push(`pruned results now ${fmt(sums.pruned)}`);
    regionDd.textContent = partsText.join(' · ') || '—';
    drawGauge(gauge, { win, threshold, tokens: figure, regions: sums });
    list.refresh();
  });
  return () => {
    cancelled = true;
  };
}

/** The latest compaction on the path to `leafId` (transcript contexts do not name it). */
function findCompaction(session, leafId) {
  try {
    return session.buildContext({ leafId }).compactionId ?? null;
  } catch {
    return null;
  }
}

function findFirstKept(session, compactionId) {
  try {
    return session.entry(compactionId)?.firstKeptEntryId;
  } catch {
    return undefined;
  }
}

function drawGauge(gauge, { win, threshold, tokens, regions }) {
  gauge.replaceChildren();
  const pct = (t) => `${Math.max(0, Math.min(100, (100 * t) / win))}%`;
  const bar = h('div', { class: 'gauge-bar' });
  if (regions) {
    for (const key of ['summary', 'kept', 'history', 'new']) {
      if (!regions[key]) continue;
      const part = h('span', {
        class: `gauge-part region-${key}`,
        title: `${key}: ${fmt(regions[key])} tokens (estimate)`,
      });
      part.style.width = pct(regions[key]);
      bar.append(part);
    }
  }
  const reserve = h('span', { class: 'gauge-reserve', title: `above the threshold: ${fmt(win - threshold)} tokens` });
  reserve.style.left = pct(threshold);
  reserve.style.width = pct(win - threshold);
  const mark = h('span', { class: 'gauge-threshold', title: `threshold ${fmt(threshold)}` });
  mark.style.left = pct(threshold);
  const now = h('span', {
    class: `gauge-now${tokens > threshold ? ' over' : ''}`,
    title: `context ${fmt(tokens)} tokens`,
  });
  now.style.left = pct(tokens);
  bar.append(reserve, mark, now);
  const scale = h(
    'div',
    { class: 'gauge-scale small muted' },
    h('span', { text: '0' }),
    h('span', { text: `${fmtShort(tokens)} now · threshold ${fmtShort(threshold)}` }),
    h('span', { text: fmtShort(win) }),
  );
  gauge.setAttribute('aria-label', `${fmt(tokens)} of ${fmt(win)} tokens, threshold ${fmt(threshold)}`);
  gauge.append(bar, scale);
}

function controls(ctx) {
  const { settings } = ctx;
  const box = h('form', { class: 'context-controls', onsubmit: (e) => e.preventDefault() });
  const windowSelect = h('select', { id: 'ctx-window', 'aria-label': 'context window' });
  const values = WINDOWS.includes(settings.contextWindow)
    ? WINDOWS
    : [...WINDOWS, settings.contextWindow].sort((a, b) => a - b);
  for (const w of values)
    windowSelect.append(
      h('option', { value: String(w), text: `${fmtShort(w)} window`, selected: w === settings.contextWindow }),
    );
  windowSelect.addEventListener('change', () => ctx.onSettings({ contextWindow: Number(windowSelect.value) }));
  const percent = h('input', {
    id: 'ctx-percent',
    type: 'number',
    min: '0',
    max: '99',
    step: '1',
    placeholder: 'auto',
    value: settings.thresholdPercent > 0 ? String(settings.thresholdPercent) : '',
    'aria-label': 'threshold percent',
  });
  percent.addEventListener('change', () =>
    ctx.onSettings({ thresholdPercent: percent.value === '' ? -1 : Number(percent.value) }),
  );
  const reserve = h('input', {
    id: 'ctx-reserve',
    type: 'number',
    min: '0',
    step: '1024',
    placeholder: 'default',
    value: Number.isFinite(settings.reserveTokens) ? String(settings.reserveTokens) : '',
    'aria-label': 'reserve tokens',
  });
  reserve.addEventListener('change', () =>
    ctx.onSettings({ reserveTokens: reserve.value === '' ? null : Number(reserve.value) }),
  );
  const transcript = h('input', { id: 'ctx-transcript', type: 'checkbox', checked: !!settings.transcript });
  transcript.addEventListener('change', () => ctx.onSettings({ transcript: transcript.checked }));
  box.append(
    h('label', null, 'Window ', windowSelect),
    h('label', null, 'Threshold % ', percent),
    h('label', null, 'Reserve ', reserve),
    h('label', { class: 'check' }, transcript, ' display transcript'),
  );
  return box;
}
