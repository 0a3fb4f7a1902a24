// The demo page. `make demo` copies the built package to ./pkg/ and generates ./sample/sample.jsonl.
// Text from a session file is untrusted: it is only ever inserted with textContent.
import { init, version, Session, thresholdTokens } from './pkg/web.js';

const $ = (id) => document.getElementById(id);
const fmt = (n) => Number(n).toLocaleString('en-US');
const CONTEXT_WINDOW = 200_000;

function showError(el, message) {
  el.textContent = message;
  el.className = 'error';
}

function addStat(list, name, value, id) {
  const dt = document.createElement('dt');
  dt.textContent = name;
  const dd = document.createElement('dd');
  dd.textContent = value;
  if (id) dd.id = id;
  list.append(dt, dd);
}

/** A one-line description of a path entry, for the path list. */
function describe(info) {
  return info.type === 'message' ? `${info.role ?? '?'}` : info.type;
}

function render(session, label) {
  const stats = $('stats');
  stats.replaceChildren();
  const index = session.index();
  const byId = new Map(index.map((e) => [e.id, e]));
  const children = new Map();
  for (const e of index) children.set(e.parentId, (children.get(e.parentId) ?? 0) + 1);
  const branchPoints = [...children.entries()].filter(([parent, n]) => parent !== null && n > 1).length;
  const path = session.leafId ? session.pathTo(session.leafId) : [];
  const ctx = session.buildContext();
  const tokens = session.contextTokens();
  const threshold = thresholdTokens(CONTEXT_WINDOW);

  addStat(stats, 'file', label);
  addStat(stats, 'entries', fmt(session.size), 'entry-count');
  addStat(stats, 'format version', `${session.version.current} (on disk ${session.version.onDisk})`);
  addStat(stats, 'branch points', fmt(branchPoints));
  addStat(stats, 'compactions', fmt(index.filter((e) => e.type === 'compaction').length));
  addStat(stats, 'leaf', session.leafId ?? '(none)');
  addStat(stats, 'active path', `${fmt(path.length)} entries`, 'path-length');
  addStat(stats, 'context messages', fmt(ctx.messages.length), 'context-messages');
  addStat(stats, 'context token estimate', fmt(tokens.estimatedTokens), 'context-tokens');
  addStat(
    stats,
    'context by last usage',
    tokens.lastUsageEntryId === null
      ? 'no usage recorded'
      : `${fmt(tokens.tokens)} (${fmt(tokens.usageTokens)} reported + ${fmt(tokens.trailingTokens)} estimated after)`,
  );
  addStat(
    stats,
    `threshold for a ${fmt(CONTEXT_WINDOW)}-token window`,
    `${fmt(threshold)} — ${tokens.tokens > threshold ? 'would compact' : 'below'}`,
  );
  stats.hidden = false;

  // The active path, with runs of the same kind folded: "user, assistant ×3, toolResult ×3, …".
  const runs = [];
  for (const id of path) {
    const what = describe(byId.get(id));
    const last = runs.at(-1);
    if (last && last.what === what) last.n++;
    else runs.push({ what, n: 1 });
  }
  const list = $('path');
  list.replaceChildren();
  for (const { what, n } of runs.slice(-200)) {
    const li = document.createElement('li');
    li.textContent = n > 1 ? `${what} ×${n}` : what;
    list.append(li);
  }
  $('path-note').textContent =
    runs.length > 200 ? `last 200 of ${fmt(runs.length)} runs, oldest first` : `${fmt(runs.length)} runs, oldest first`;

  const warnings = $('warnings');
  warnings.replaceChildren();
  for (const w of session.warnings) {
    const li = document.createElement('li');
    li.textContent = `line ${w.line}: ${w.code} — ${w.message}`;
    warnings.append(li);
  }
  $('warnings-section').hidden = session.warnings.length === 0;
}

function load(bytes, label) {
  const status = $('status');
  try {
    const t0 = performance.now();
    const session = Session.fromJsonl(bytes);
    const ms = performance.now() - t0;
    render(session, label);
    session.free();
    status.textContent = `loaded ${fmt(bytes.length)} bytes in ${ms.toFixed(0)} ms`;
    status.className = 'muted';
  } catch (err) {
    showError(status, `${err.code ?? 'Error'}: ${err.message}`);
  }
}

async function loadSample() {
  const status = $('status');
  let res;
  try {
    res = await fetch('./sample/sample.jsonl');
  } catch (err) {
    showError(status, `could not fetch the sample: ${err.message}`);
    return;
  }
  if (!res.ok) {
    status.textContent =
      'No sample session yet (www/sample/sample.jsonl). `make demo` generates it with gen-session.';
    return;
  }
  load(new Uint8Array(await res.arrayBuffer()), 'sample.jsonl (bundled)');
}

$('file').addEventListener('change', async (event) => {
  const file = event.target.files?.[0];
  if (file) load(new Uint8Array(await file.arrayBuffer()), file.name);
});

try {
  await init();
  $('version').textContent = `v${version()}`;
} catch (err) {
  showError($('version'), `failed to load the WebAssembly module: ${err.message}`);
}
await loadSample();
document.body.dataset.ready = 'true';
