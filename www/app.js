// The session tree explorer: loads a session file with the ctxfold package (WebAssembly) and
// shows its tree, the entry behind each node, the LLM context at any entry, and the actions
// (compact, prune, navigate, undo, download).
//
// Modules: model.js (tree → segments and lanes), tree.js (the tree view), entry.js (entry
// panel), context.js (context view), actions.js (actions tab), images.js (images and frames),
// search.js (search and filter in the tree), dom.js (helpers). Session text is untrusted: it is
// only ever inserted as text.
//
// The Simulate panel (simulate.js, sim-agent.js, timeline.js) runs a scripted agent through the
// package's Maintainer with its session shown here; the Compaction tab (report.js) shows the
// report of a selected compaction, with Undo compaction. Import reads a messages file of another
// format (Session.fromMessages).

import { capabilities, renderActionsPanel } from './actions.js';
import { renderContextPanel } from './context.js';
import { $, afterPaint, errorText, fmt, fmtBytes, h, runSliced, yieldToPage } from './dom.js';
import { renderEntryPanel } from './entry.js';
import { Lightbox, UrlScope } from './images.js';
import { activePath, buildTree, segPick, TokenTally } from './model.js';
import { init, Session, version } from './pkg/entries/web.js';
import { renderCompactionPanel, summarizedEntries } from './report.js';
import { TreeSearch } from './search.js';
import { TreeView } from './tree.js';

/** Formats `Session.fromMessages` reads (docs/guide/formats.md); the package says which it knows. */
const IMPORT_FORMATS = ['openai-chat', 'openai-responses', 'anthropic', 'gemini', 'ai-sdk-model', 'ai-sdk-ui', 'pi'];

const WARNINGS_SHOWN = 1000;

const app = {
  session: null,
  /** Whether the explorer owns `session` (frees it when another is opened); a simulation's is not. */
  sessionOwned: true,
  fileName: '',
  /** The Simulate panel's run (simulate.js), once the panel was opened. */
  sim: null,
  /** The compaction the Compaction tab shows; its summarized entries are highlighted in the tree. */
  compactionId: null,
  tree: null,
  path: null,
  tally: null,
  labels: {},
  selection: null,
  settings: { contextWindow: 200_000, thresholdPercent: -1, reserveTokens: null, transcript: false },
  undo: [],
  scope: new UrlScope(),
  lightbox: new Lightbox($('lightbox')),
  tab: 'entry',
  tallyRun: 0,
  // Light copies of entries the page wrote itself (id → {session, entry}), for the tree's cards:
  // a snapcompact compaction without its frames' bytes (actions.js).
  cardEntries: new Map(),
  statsRun: 0,
  tokensCache: new Map(),
  cancelContext: () => {},

  /** `Session.contextTokens` at `leafId`, memoised until the session changes. */
  contextTokens(leafId) {
    let t = this.tokensCache.get(leafId);
    if (!t) {
      t = this.session.contextTokens({ leafId });
      this.tokensCache.set(leafId, t);
    }
    return t;
  },

  /** Selects segment `seg` (and an entry in it: its representative by default). */
  selectSeg(seg, entryId) {
    if (!this.tree || seg < 0 || seg >= this.tree.segCount) return;
    const id = entryId ?? this.tree.index[segPick(this.tree, seg)].id;
    this.selection = { seg, entryId: id };
    treeView.setSelection(this.selection);
    if (this.session.entry(id)?.type === 'compaction') this.setCompaction(id);
    renderPanel();
  },

  /** Makes `id` the compaction of the Compaction tab and highlights what it summarized. */
  setCompaction(id) {
    this.compactionId = id;
    updateHighlight();
  },

  /** Selects compaction `id` in the tree and opens its report. */
  showCompaction(id) {
    if (!this.tree?.ord.has(id)) {
      setStatus(`${id} is not in the session shown (an earlier session, before a handoff?).`, 'warn');
      return;
    }
    this.selectEntry(id, { tab: 'compaction' });
  },

  /** Undoes compaction `id` (the leaf goes back to its parent); the top Undo moves it back again. */
  undoCompaction(id) {
    const before = this.session.leafId;
    let leaf;
    try {
      leaf = this.session.undoCompaction(id);
    } catch (err) {
      setStatus(`Not undone: ${errorText(err)}`, 'error');
      return;
    }
    this.recordLeafMove(before, 'compaction undo');
    this.sim?.undone(id, before, leaf);
    leafChanged(true);
    setStatus(`Undid compaction ${id}: the leaf is back at ${leaf ?? '(none)'}.`, 'ok');
    document.body.dataset.undone = id;
  },

  setStatus: (text, kind) => setStatus(text, kind),

  /**
   * Shows `session` (already built, e.g. the simulation's) as if it had been opened. `owned`:
   * the explorer may free it when another one replaces it.
   */
  useSession(session, name, { owned = true, quiet = false } = {}) {
    if (this.session && this.session !== session && this.sessionOwned) this.session.free();
    this.session = session;
    this.sessionOwned = owned;
    this.fileName = name;
    this.undo = [];
    this.selection = null;
    this.tally = null;
    this.compactionId = null;
    rebuild({ select: session.leafId, keepTokens: false });
    updateTopButtons();
    if (!quiet) setStatus(`Showing ${name}: ${fmt(session.size)} entries.`, 'ok');
  },

  /** After the session grew or changed under the explorer (a simulation step). */
  refresh() {
    if (!this.session) return;
    rebuild({ select: this.selection?.entryId, keepTokens: true });
    updateTopButtons();
  },

  /** Selects an entry by id, shows it in the tree and in the entry tab (or `tab`). */
  selectEntry(id, { tab = 'entry' } = {}) {
    const ord = this.tree?.ord.get(id);
    if (ord === undefined) return;
    const seg = this.tree.entrySeg[ord];
    this.selection = { seg, entryId: id };
    if (this.session.entry(id)?.type === 'compaction') this.setCompaction(id);
    treeView.setSelection(this.selection);
    treeView.reveal(seg);
    showTab(tab);
  },

  /** Moves the leaf (navigation without a summary); Undo moves it back. */
  moveLeaf(id, reason = 'navigate', { quiet = false } = {}) {
    const before = this.session.leafId;
    try {
      this.session.branch(id);
    } catch (err) {
      setStatus(errorText(err), 'error');
      return;
    }
    this.recordLeafMove(before, reason);
    leafChanged(quiet);
  },

  recordLeafMove(leafId, reason) {
    this.undo.push({ leafId, reason });
    updateTopButtons();
  },

  /** Moves the leaf back to where it was before the last move, compaction or navigation. */
  undoLeaf({ quiet = false } = {}) {
    const step = this.undo.pop();
    if (!step) return;
    if (step.leafId === null || !this.tree.ord.has(step.leafId)) this.session.resetLeaf();
    else this.session.branch(step.leafId);
    // The selection follows the leaf back (a quiet undo restores after a failed action).
    if (!quiet && step.leafId !== null && this.tree.ord.has(step.leafId)) {
      this.selection = { seg: this.tree.entrySeg[this.tree.ord.get(step.leafId)], entryId: step.leafId };
      treeView.setSelection(this.selection);
      treeView.reveal(this.selection.seg);
    }
    leafChanged(quiet);
    if (!quiet) setStatus(`Undid the ${step.reason}: the leaf is back at ${step.leafId ?? '(none)'}.`);
  },

  /** After entries were appended or changed: rebuild the tree, keep the estimates of the others. */
  afterMutation({ select, contentChanged = false } = {}) {
    rebuild({ select, keepTokens: !contentChanged });
  },

  download() {
    if (!this.session) return;
    const bytes = this.session.toBytes();
    const url = URL.createObjectURL(new Blob([bytes], { type: 'application/x-ndjson' }));
    const base =
      (this.fileName || 'session')
        .replace(/\.jsonl$/i, '')
        .replace(/[^\w.-]+/g, '_')
        .slice(0, 80) || 'session';
    const a = h('a', { href: url, download: `${base}.jsonl` });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
    setStatus(`Saved ${base}.jsonl (${fmtBytes(bytes.length)}).`);
  },
};
window.explorer = app; // for the console and the tests

const treeView = new TreeView($('tree'), {
  onSelect: (seg, entryId) => app.selectSeg(seg, entryId),
  cardEntry: (id) => {
    const light = app.cardEntries.get(id);
    return light?.session === app.session ? light.entry : undefined;
  },
});
const treeSearch = new TreeSearch({
  form: $('tree-search-form'),
  results: $('search-results'),
  onSelect: (id) => app.selectEntry(id),
  model: () => (app.session && app.tree ? { session: app.session, tree: app.tree } : null),
});
app.search = treeSearch; // for the tests

function setStatus(text, kind = '') {
  const el = $('status');
  el.textContent = text;
  el.className = `status ${kind || 'muted'}`;
}

function updateTopButtons() {
  $('undo').disabled = app.undo.length === 0;
  $('undo').textContent = app.undo.length ? `Undo (${app.undo.length})` : 'Undo';
  $('download').disabled = !app.session;
}

// --- loading -----------------------------------------------------------------------------------

async function load(bytes, name) {
  setStatus(`Reading ${name} (${fmtBytes(bytes.length)})…`, 'busy');
  document.body.dataset.ready = 'false';
  await afterPaint();
  let session;
  const t0 = performance.now();
  try {
    session = Session.fromJsonl(bytes);
  } catch (err) {
    setStatus(`Could not open ${name}: ${errorText(err)}`, 'error');
    document.body.dataset.ready = 'true';
    return false;
  }
  const ms = performance.now() - t0;
  app.sim?.detach();
  await yieldToPage(); // parsing and building the tree are separate tasks: the page can paint between
  app.useSession(session, name, { owned: true, quiet: true });
  const { migrated, unread } = loadWarnings(session);
  const notes = [];
  if (migrated)
    notes.push(
      `migrated from format version ${session.version.onDisk} to ${session.version.current} (Download keeps it)`,
    );
  if (unread) notes.push(`${fmt(unread)} line${unread === 1 ? '' : 's'} could not be read (see Load report)`);
  setStatus(
    `Opened ${name}: ${fmt(session.size)} entries, ${fmtBytes(bytes.length)}, parsed in ${fmt(Math.round(ms))} ms${notes.length ? ` — ${notes.join('; ')}` : ''}.`,
    unread ? 'warn' : 'ok',
  );
  updateTopButtons();
  document.body.dataset.ready = 'true';
  return true;
}

/**
 * The load warnings by kind, from their codes: `E_MIGRATED` says the file was migrated from an
 * older format version (nothing was lost); every other code is a line that could not be read.
 */
function loadWarnings(session) {
  let migrated = 0;
  for (const w of session.warnings) if (w.code === 'E_MIGRATED') migrated++;
  return { migrated, unread: session.warnings.length - migrated };
}

/** Rebuilds the model after a load or a change, and redraws. */
function rebuild({ select, keepTokens }) {
  const { session } = app;
  const previous = app.tally;
  app.tokensCache.clear();
  app.tree = buildTree(session.index());
  treeSearch.reset();
  app.labels = session.labels();
  app.path = activePath(app.tree, session.leafId);
  app.tally = new TokenTally(app.tree);
  if (keepTokens) app.tally.adopt(previous);
  startTally();

  const keep = select ?? app.selection?.entryId ?? session.leafId;
  const ord = keep === null || keep === undefined ? undefined : app.tree.ord.get(keep);
  if (ord !== undefined) app.selection = { seg: app.tree.entrySeg[ord], entryId: keep };
  else app.selection = app.tree.segCount ? { seg: 0, entryId: app.tree.index[segPick(app.tree, 0)].id } : null;

  updateStats();
  updateReport();
  treeView.setData({
    session,
    tree: app.tree,
    path: app.path,
    tally: app.tally,
    labels: app.labels,
    selection: app.selection,
    contextWindow: app.settings.contextWindow,
  });
  if (app.compactionId !== null && !app.tree.ord.has(app.compactionId)) app.compactionId = null;
  updateHighlight();
  if (app.selection) treeView.reveal(app.selection.seg);
  $('tree').dataset.segments = String(app.tree.segCount);
  $('tree').dataset.branchPoints = String(app.tree.stats.branchPoints);
  $('tree').dataset.compactions = String(app.tree.stats.compactions);
  renderPanel();
}

/** Estimates tokens of every entry in the background; the token bars fill in as it goes. */
function startTally() {
  const run = ++app.tallyRun;
  const tally = app.tally;
  const label = $('tally');
  label.textContent = 'counting tokens…';
  tally
    .run(app.session, {
      runSliced,
      isCancelled: () => run !== app.tallyRun,
      onProgress: () => {
        label.textContent = `counting tokens… ${Math.floor((100 * tally.done) / Math.max(1, app.tree.size))} %`;
        treeView.schedule();
      },
    })
    .then((done) => {
      if (!done) return;
      label.textContent = '';
      treeView.schedule();
    });
}

/** Highlights in the tree the entries the Compaction tab's compaction summarized. */
function updateHighlight() {
  let segs = null;
  let count = 0;
  if (app.compactionId !== null && app.tree) {
    segs = new Set();
    for (const id of summarizedEntries(app.session, app.compactionId)) {
      const ord = app.tree.ord.get(id);
      if (ord === undefined) continue;
      segs.add(app.tree.entrySeg[ord]);
      count++;
    }
  }
  $('tree').dataset.summarized = String(count);
  treeView.setData({ highlight: segs });
}

function leafChanged(quiet) {
  app.path = activePath(app.tree, app.session.leafId);
  treeView.setData({ path: app.path });
  updateStats();
  updateTopButtons();
  renderPanel();
  if (!quiet) setStatus(`The leaf is now ${app.session.leafId ?? '(none)'}.`);
}

function updateStats() {
  const { session, tree, path } = app;
  $('stats').hidden = false;
  document.body.dataset.stats = 'pending';
  $('stat-file').textContent = app.fileName;
  $('entry-count').textContent = fmt(session.size);
  $('stat-branch-points').textContent = fmt(tree.stats.branchPoints);
  $('stat-compactions').textContent = fmt(tree.stats.compactions);
  $('stat-branch-summaries').textContent = fmt(tree.stats.branchSummaries);
  $('path-length').textContent = `${fmt(path.length)} entries`;
  // The context estimate of a 100,000-message path takes a while: after the tree has painted.
  $('context-messages').textContent = '…';
  $('context-tokens').textContent = '…';
  const generation = ++app.statsRun;
  afterPaint().then(() => {
    if (generation !== app.statsRun) return;
    try {
      const tokens = app.contextTokens(session.leafId);
      $('context-messages').textContent = fmt(tokens.messages);
      $('context-tokens').textContent = fmt(tokens.estimatedTokens);
    } catch (err) {
      $('context-messages').textContent = '—';
      $('context-tokens').textContent = errorText(err);
    }
    document.body.dataset.stats = 'ready';
  });
  const n = loadWarnings(session).unread;
  $('stat-warnings-box').hidden = n === 0;
  $('stat-warnings').textContent = fmt(n);
}

function updateReport() {
  const warnings = app.session.warnings;
  const list = $('warnings');
  const items = warnings
    .slice(0, WARNINGS_SHOWN)
    .map((w) => h('li', { text: `line ${w.line}: ${w.code} — ${w.message}` }));
  if (warnings.length > WARNINGS_SHOWN)
    items.push(h('li', { class: 'muted', text: `… and ${fmt(warnings.length - WARNINGS_SHOWN)} more` }));
  list.replaceChildren(...items);
  const { header, version: v } = app.session;
  const facts = [`${app.fileName}: format version ${v.current} (${v.onDisk} on disk)`, `session ${header.id}`];
  if (header.cwd) facts.push(`cwd ${header.cwd}`);
  const { migrated, unread } = loadWarnings(app.session);
  if (migrated) facts.push(`migrated from format version ${v.onDisk} to ${v.current}: Download saves it migrated`);
  facts.push(
    unread
      ? `${fmt(unread)} line${unread === 1 ? '' : 's'} could not be read: kept as they are and listed below`
      : 'every line read',
  );
  $('report-summary').textContent = facts.join(' · ');
  $('tab-report').textContent = warnings.length ? `Load report (${fmt(warnings.length)})` : 'Load report';
}

// --- panels ------------------------------------------------------------------------------------

function showTab(name) {
  app.tab = name;
  for (const tab of document.querySelectorAll('[role="tab"]')) {
    const on = tab.dataset.tab === name;
    tab.setAttribute('aria-selected', String(on));
    $(`panel-${tab.dataset.tab}`).hidden = !on;
  }
  renderPanel();
}

/** Renders the visible panel only (the context view can be expensive). */
function renderPanel() {
  if (!app.session) return;
  app.cancelContext();
  app.cancelContext = () => {};
  const ctx = {
    session: app.session,
    tree: app.tree,
    tally: app.tally,
    labels: app.labels,
    path: app.path,
    contextTokens: (leafId) => app.contextTokens(leafId),
    scope: app.scope,
    lightbox: app.lightbox,
    settings: app.settings,
    onSettings: (patch) => {
      Object.assign(app.settings, patch);
      treeView.setData({ contextWindow: app.settings.contextWindow });
      renderPanel();
    },
    actions: {
      branch: (id) => app.moveLeaf(id),
      selectEntry: (id) => app.selectEntry(id),
      showContext: (id) => {
        app.selectEntry(id);
        showTab('context');
      },
      navigate: capabilities(app.session).navigateTree
        ? (id) => {
            app.selectEntry(id);
            showTab('actions');
          }
        : null,
    },
  };
  try {
    if (app.tab === 'entry' && app.selection) {
      renderEntryPanel($('panel-entry'), ctx, app.selection.seg, app.selection.entryId);
    } else if (app.tab === 'entry') {
      $('panel-entry').replaceChildren(h('p', { class: 'muted', text: 'This session has no entries yet.' }));
    } else if (app.tab === 'context') {
      const leaf = app.selection?.entryId ?? app.session.leafId;
      app.cancelContext = renderContextPanel($('panel-context'), ctx, leaf);
    } else if (app.tab === 'actions') {
      renderActionsPanel($('panel-actions'), app);
    } else if (app.tab === 'compaction') {
      const sel = app.selection?.entryId;
      const id = sel && app.session.entry(sel)?.type === 'compaction' ? sel : app.compactionId;
      renderCompactionPanel($('panel-compaction'), app, id);
    }
  } catch (err) {
    const panel = $(`panel-${app.tab}`);
    panel.replaceChildren(h('p', { class: 'error', text: `Could not show this: ${errorText(err)}` }));
  }
}

// --- wiring ------------------------------------------------------------------------------------

for (const tab of document.querySelectorAll('[role="tab"]'))
  tab.addEventListener('click', () => showTab(tab.dataset.tab));
$('stat-warnings').addEventListener('click', () => showTab('report'));
$('undo').addEventListener('click', () => app.undoLeaf());
$('download').addEventListener('click', () => app.download());
$('zoom-in').addEventListener('click', () => treeView.zoom(1));
$('zoom-out').addEventListener('click', () => treeView.zoom(-1));
$('goto-leaf').addEventListener('click', () => {
  if (app.path?.leafSeg >= 0) app.selectEntry(app.session.leafId);
});
$('load-sample').addEventListener('click', () => loadSample());
$('open-simulate').addEventListener('click', () => toggleSimulate());
$('import-format').replaceChildren(...IMPORT_FORMATS.map((f) => h('option', { value: f, text: f })));
$('import-file').addEventListener('change', async (event) => {
  const file = event.target.files?.[0];
  if (file) await importMessages(file, $('import-format').value);
  event.target.value = '';
});

/** Opens or closes the Simulate panel (built on first use: it needs the package). */
async function toggleSimulate() {
  const panel = $('sim-panel');
  const open = panel.hidden;
  panel.hidden = !open;
  $('open-simulate').setAttribute('aria-expanded', String(open));
  if (open && !app.sim) {
    const { Simulation } = await import('./simulate.js');
    app.sim = new Simulation(app);
    app.sim.drawChart();
  }
  if (open) app.sim.drawChart();
}

/**
 * Reads a messages file of another format: a JSON array of messages, or an object holding
 * one (`messages`, `contents`, `input`, with `system` / `systemInstruction` when present).
 */
async function importMessages(file, format) {
  let data;
  try {
    data = JSON.parse(await file.text());
  } catch (err) {
    setStatus(`Could not read ${file.name} as JSON: ${errorText(err)}`, 'error');
    return;
  }
  let messages = data;
  const options = { format };
  if (!Array.isArray(data) && data && typeof data === 'object') {
    messages = data.messages ?? data.contents ?? data.input;
    const system = data.system ?? data.systemInstruction ?? data.instructions;
    if (system !== undefined) options.system = system;
  }
  if (!Array.isArray(messages)) {
    setStatus(`${file.name}: expected an array of messages (or {messages: […]}).`, 'error');
    return;
  }
  let session;
  try {
    session = Session.fromMessages(messages, options);
  } catch (err) {
    setStatus(`Could not import ${file.name} as ${format}: ${errorText(err)}`, 'error');
    return;
  }
  app.sim?.detach();
  app.useSession(session, file.name.replace(/\.json$/i, '.jsonl'), { owned: true, quiet: true });
  const n = session.warnings.length;
  setStatus(
    `Imported ${file.name} (${format}): ${fmt(messages.length)} messages, ${fmt(session.size)} entries${n ? `, ${fmt(n)} warnings (see Load report)` : ''}.`,
    n ? 'warn' : 'ok',
  );
}
$('file').addEventListener('change', async (event) => {
  const file = event.target.files?.[0];
  if (file) await loadFile(file);
  event.target.value = '';
});

async function loadFile(file) {
  let bytes;
  try {
    bytes = new Uint8Array(await file.arrayBuffer());
  } catch (err) {
    setStatus(`Could not read ${file.name}: ${errorText(err)}`, 'error');
    return;
  }
  await load(bytes, file.name);
}

// Drag and drop anywhere on the page.
let dragDepth = 0;
const overlay = $('drop-overlay');
const hasFiles = (event) => [...(event.dataTransfer?.types ?? [])].includes('Files');
window.addEventListener('dragenter', (event) => {
  if (!hasFiles(event)) return;
  event.preventDefault();
  dragDepth++;
  overlay.hidden = false;
});
window.addEventListener('dragover', (event) => {
  if (!hasFiles(event)) return;
  event.preventDefault();
  event.dataTransfer.dropEffect = 'copy';
});
window.addEventListener('dragleave', () => {
  dragDepth = Math.max(0, dragDepth - 1);
  if (dragDepth === 0) overlay.hidden = true;
});
window.addEventListener('drop', async (event) => {
  event.preventDefault();
  dragDepth = 0;
  overlay.hidden = true;
  const file = event.dataTransfer?.files?.[0];
  if (file) await loadFile(file);
});

async function loadSample() {
  let res;
  try {
    res = await fetch('./sample/sample.jsonl');
  } catch (err) {
    setStatus(`Could not fetch the sample: ${err.message}`, 'error');
    return;
  }
  if (!res.ok) {
    setStatus(
      'No bundled sample here (www/sample/sample.jsonl): `make demo` generates it. Open or drop a file instead.',
    );
    return;
  }
  await load(new Uint8Array(await res.arrayBuffer()), 'sample.jsonl');
}

try {
  await init();
  $('version').textContent = `v${version()}`;
  await loadSample();
} catch (err) {
  setStatus(`Could not load the WebAssembly module: ${errorText(err)}`, 'error');
}
updateTopButtons();
document.body.dataset.ready = 'true';
