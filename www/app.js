// The demo page. `make demo` copies the built package to ./pkg/ and generates ./sample/sample.jsonl.
// Text from the session file is untrusted: it is only ever inserted with textContent.
import { init, version } from './pkg/web.js';

const $ = (id) => document.getElementById(id);

function showError(el, message) {
  el.textContent = message;
  el.className = 'error';
}

function addStat(list, name, value) {
  const dt = document.createElement('dt');
  dt.textContent = name;
  const dd = document.createElement('dd');
  dd.textContent = value;
  list.append(dt, dd);
}

async function loadSample() {
  const status = $('sample-status');
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
  const text = await res.text();
  const lines = text.split('\n').filter((line) => line.trim() !== '');
  const types = new Map();
  let malformed = 0;
  for (const line of lines) {
    try {
      const type = JSON.parse(line)?.type;
      types.set(String(type), (types.get(String(type)) ?? 0) + 1);
    } catch {
      malformed++;
    }
  }
  status.textContent = `www/sample/sample.jsonl: ${lines.length.toLocaleString()} lines, ${(text.length / 1024).toFixed(0)} KiB`;
  const stats = $('sample-stats');
  for (const [type, count] of [...types].sort((a, b) => b[1] - a[1])) addStat(stats, type, count.toLocaleString());
  if (malformed) addStat(stats, 'malformed lines', malformed.toLocaleString());
  stats.hidden = false;
}

try {
  await init();
  $('version').textContent = `v${version()}`;
} catch (err) {
  showError($('version'), `failed to load the WebAssembly module: ${err.message}`);
}
await loadSample();
