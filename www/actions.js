// The actions tab: compact now (snapcompact, or an LLM summary through an OpenAI-compatible
// endpoint or the remote endpoint protocol), prune, navigate, undo, download; and the
// snapcompact preview with its frames and their billed cost per provider.
//
// Features the package does not have yet are detected, not assumed (`capabilities`): the
// buttons for them appear once the API exists. The API key lives in this module's memory only:
// never in storage, never in the URL, never in the DOM as an attribute.
import { errorText, fmt, h, yieldToPage } from './dom.js';
import { framesGallery, UrlScope } from './images.js';
import { chatCompletionsUrl } from './urls.js';

/** What this build of the package can do beyond the basics. */
export function capabilities(session) {
  return {
    // session.pruneStale / session.prune(options?) → { prunedCount, tokensSaved, pruned } (spec: compaction §6).
    prune: typeof session?.prune === 'function' && typeof session?.pruneStale === 'function',
    // session.navigateTree(targetId, { summarize, customInstructions? }) (spec: compaction §7.5).
    navigateTree: typeof session?.navigateTree === 'function',
    // A snapcompact compaction (archive of frames in preserveData.snapcompact, snapcompact.md §9).
    // compact({strategy: 'snapcompact'}) came with the same build as compact().
    snapcompact: typeof session?.compact === 'function',
  };
}

/** Readers the snapcompact preview can target (the shape and its price follow the model). */
export const READERS = [
  { label: 'Claude Opus 4.7 (Anthropic)', id: 'claude-opus-4-7', api: 'anthropic-messages', provider: 'anthropic' },
  { label: 'Claude Sonnet 4.5 (Anthropic)', id: 'claude-sonnet-4-5', api: 'anthropic-messages', provider: 'anthropic' },
  { label: 'GPT-5 (OpenAI)', id: 'gpt-5', api: 'openai-responses', provider: 'openai' },
  { label: 'Gemini 3 Pro (Google)', id: 'gemini-3-pro', api: 'google-generative-ai', provider: 'google' },
];

// Form values, kept in memory for the page's lifetime only.
const form = {
  strategy: 'snapcompact',
  chatUrl: 'https://api.openai.com/v1',
  apiKey: '',
  model: 'gpt-4o-mini',
  remoteUrl: '',
  keepRecentTokens: 20_000,
  customInstructions: '',
  reader: READERS[1].id,
  maxFrames: 17,
};

let running = null; // { controller }
const lastStatus = { text: '', kind: '' }; // survives the tab being redrawn after a change
const previewScope = new UrlScope(); // blob: URLs of the preview's frames
let previewOutput = null; // the last preview, shown again when the tab is redrawn
let lastPrune = { text: '', error: false }; // the last prune's outcome, shown again after a redraw

/**
 * Renders the actions tab.
 * @param app the explorer (app.js): session, selection, settings, moveLeaf, undoLeaf, afterMutation, …
 */
export function renderActionsPanel(panel, app) {
  const caps = capabilities(app.session);
  // Selecting a node is for viewing: Compact and Preview work at the leaf, as the agent does;
  // only Navigate acts on the selected entry (it says so on its buttons).
  const leaf = app.session.leafId;
  const target = app.selection?.entryId ?? leaf;
  const isLeaf = target === leaf;
  const sections = [];

  // --- compact ---------------------------------------------------------------------------
  const compact = h('section', { class: 'action-section', id: 'compact-section' });
  compact.append(h('h3', { text: 'Compact now' }));
  compact.append(
    h(
      'p',
      { class: 'muted small' },
      'At the session leaf ',
      h('code', { text: leaf ?? '(none)' }),
      isLeaf ? '.' : ' (not the selected entry: use Navigate to move the leaf first).',
    ),
  );
  const strategies = h('fieldset', { class: 'strategies' }, h('legend', { text: 'Strategy' }));
  const radio = (value, title, note) => {
    const input = h('input', { type: 'radio', name: 'strategy', value, checked: form.strategy === value });
    input.addEventListener('change', () => {
      form.strategy = value;
      renderActionsPanel(panel, app);
    });
    return h(
      'label',
      { class: 'radio' },
      input,
      h(
        'span',
        null,
        h('strong', { text: title }),
        note ? h('span', { class: 'muted small', text: ` — ${note}` }) : null,
      ),
    );
  };
  strategies.append(
    radio(
      'snapcompact',
      'snapcompact',
      caps.snapcompact
        ? 'history printed onto PNG frames; no key, no network'
        : 'preview only: this build has no snapcompact compaction',
    ),
    radio(
      'chat',
      'context-full via an OpenAI-compatible endpoint',
      'an LLM writes the summary; your key stays in this page',
    ),
    radio('remote', 'remote endpoint protocol', 'POST {systemPrompt, prompt, maxTokens} → {summary}'),
  );
  compact.append(strategies);

  const opts = h('div', { class: 'form-grid' });
  const keep = numberInput('keep-recent', form.keepRecentTokens, (v) => (form.keepRecentTokens = v));
  opts.append(h('label', { for: 'keep-recent', text: 'Keep recent tokens' }), keep);
  if (form.strategy === 'chat') {
    const url = textInput('chat-url', form.chatUrl, (v) => (form.chatUrl = v), 'https://api.openai.com/v1');
    const key = h('input', {
      id: 'chat-key',
      type: 'password',
      autocomplete: 'off',
      spellcheck: 'false',
      placeholder: 'sk-…',
    });
    key.value = form.apiKey;
    key.addEventListener('input', () => (form.apiKey = key.value));
    const model = textInput('chat-model', form.model, (v) => (form.model = v), 'gpt-4o-mini');
    opts.append(
      h('label', { for: 'chat-url', text: 'Base URL' }),
      url,
      h('label', { for: 'chat-key', text: 'API key' }),
      key,
      h('label', { for: 'chat-model', text: 'Model' }),
      model,
    );
  } else if (form.strategy === 'remote') {
    const url = textInput(
      'remote-url',
      form.remoteUrl,
      (v) => (form.remoteUrl = v),
      'https://summarizer.example/compact',
    );
    opts.append(h('label', { for: 'remote-url', text: 'Endpoint URL' }), url);
  } else {
    const reader = h('select', { id: 'reader' });
    for (const r of READERS) reader.append(h('option', { value: r.id, text: r.label, selected: r.id === form.reader }));
    reader.addEventListener('change', () => (form.reader = reader.value));
    const maxFrames = h('select', { id: 'max-frames' });
    for (const n of [5, 10, 17, 40, 80])
      maxFrames.append(h('option', { value: String(n), text: `${n} frames`, selected: n === form.maxFrames }));
    maxFrames.addEventListener('change', () => (form.maxFrames = Number(maxFrames.value)));
    opts.append(
      h('label', { for: 'reader', text: 'Reader model' }),
      reader,
      h('label', { for: 'max-frames', text: 'At most' }),
      maxFrames,
    );
  }
  if (form.strategy !== 'snapcompact') {
    const instructions = h('textarea', {
      id: 'custom-instructions',
      rows: '2',
      placeholder: 'optional: what the summary should focus on',
    });
    instructions.value = form.customInstructions;
    instructions.addEventListener('input', () => (form.customInstructions = instructions.value));
    opts.append(h('label', { for: 'custom-instructions', text: 'Instructions' }), instructions);
  }
  compact.append(opts);

  const status = h('p', {
    class: `action-status ${lastStatus.kind}`,
    id: 'compact-status',
    role: 'status',
    text: lastStatus.text,
  });
  const buttons = h('div', { class: 'buttons' });
  const onlyPreview = form.strategy === 'snapcompact' && !caps.snapcompact;
  const go = h('button', {
    type: 'button',
    class: 'primary',
    id: 'compact-run',
    text: onlyPreview ? 'Render snapcompact preview' : 'Compact',
  });
  const previewButton =
    form.strategy === 'snapcompact' && caps.snapcompact
      ? h('button', { type: 'button', id: 'preview-run', text: 'Preview frames' })
      : null;
  const abort = h('button', { type: 'button', id: 'compact-abort', text: 'Abort', disabled: !running });
  abort.addEventListener('click', () => running?.controller.abort());
  buttons.append(go, ...(previewButton ? [previewButton] : []), abort);
  compact.append(buttons, status);
  const output = h('div', { class: 'action-output', id: 'compact-output' });
  if (previewOutput) output.append(...previewOutput);
  compact.append(output);
  const run = (button, preview) =>
    button.addEventListener('click', async () => {
      if (running) return;
      button.disabled = true;
      abort.disabled = false;
      try {
        if (preview) await snapcompactPreview(app, status, output);
        else await compactNow(app, status, caps);
      } finally {
        button.disabled = false;
        abort.disabled = true;
      }
    });
  run(go, onlyPreview);
  if (previewButton) run(previewButton, true);
  sections.push(compact);

  // --- prune -------------------------------------------------------------------------------
  const prune = h('section', { class: 'action-section', id: 'prune-section' });
  prune.append(h('h3', { text: 'Prune tool outputs' }));
  if (caps.prune) {
    // The panel is rebuilt after every change: the last outcome is kept and shown again.
    const pruneStatus = h('p', {
      class: `action-status${lastPrune.error ? ' error' : ''}`,
      role: 'status',
      text: lastPrune.text,
    });
    prune.append(
      h('p', {
        class: 'muted small',
        text: 'Replaces old, superseded and uneventful tool results on the active path by short notices (spec §6); entries are kept.',
      }),
      h('button', {
        type: 'button',
        id: 'prune-run',
        text: 'Prune now',
        onclick: () => {
          try {
            // As the coding agent does after a turn: the stale pass (superseded reads, useless
            // results; 90 min idle flush), then the threshold prune with its warm-cache guard.
            const stale = app.session.pruneStale({ idleFlushMs: 90 * 60_000 });
            const old = app.session.prune({ cacheWarmSuffixTokens: 8_000 });
            const count = stale.prunedCount + old.prunedCount;
            const saved = stale.tokensSaved + old.tokensSaved;
            lastPrune = {
              text: `pruned ${fmt(count)} results (${fmt(stale.prunedCount)} superseded or uneventful, ${fmt(old.prunedCount)} old), saved ${fmt(saved)} tokens`,
              error: false,
            };
            app.afterMutation({ contentChanged: true });
          } catch (err) {
            lastPrune = { text: errorText(err), error: true };
          }
          pruneStatus.textContent = lastPrune.text;
          pruneStatus.className = `action-status${lastPrune.error ? ' error' : ''}`;
        },
      }),
      pruneStatus,
    );
  } else {
    prune.append(
      h('p', {
        class: 'muted small',
        text: 'Not in this build of ctxfold yet (session.prune). The button appears when it is.',
      }),
    );
  }
  sections.push(prune);

  // --- navigate ----------------------------------------------------------------------------
  const nav = h('section', { class: 'action-section', id: 'navigate-section' });
  nav.append(h('h3', { text: 'Navigate' }));
  const navButtons = h(
    'div',
    { class: 'buttons' },
    h('button', {
      type: 'button',
      id: 'branch-here',
      text: 'Make the selected entry the leaf',
      disabled: isLeaf || !target,
      onclick: () => app.moveLeaf(target),
    }),
    caps.navigateTree
      ? h('button', {
          type: 'button',
          id: 'navigate-summary',
          text: 'Navigate with a branch summary',
          disabled: isLeaf || !target,
          onclick: () => navigateWithSummary(app, target, status),
        })
      : null,
    h('button', {
      type: 'button',
      id: 'undo-leaf',
      text: `Undo leaf move${app.undo.length ? ` (${app.undo.length})` : ''}`,
      disabled: app.undo.length === 0,
      onclick: () => app.undoLeaf(),
    }),
  );
  nav.append(navButtons);
  if (!caps.navigateTree) {
    nav.append(
      h('p', {
        class: 'muted small',
        text: 'Branch summaries on navigation (session.navigateTree) are not in this build yet: navigation moves the leaf without a summary.',
      }),
    );
  }
  if (app.undo.length) {
    const list = h('ol', { class: 'undo-list small' });
    for (const step of app.undo.slice(-5).reverse())
      list.append(h('li', null, `${step.reason}: leaf was `, h('code', { text: step.leafId ?? '(none)' })));
    nav.append(list);
  }
  sections.push(nav);

  // --- download ----------------------------------------------------------------------------
  const save = h('section', { class: 'action-section' });
  save.append(
    h('h3', { text: 'Save' }),
    h('p', { class: 'muted small', text: 'Unchanged lines are written back byte for byte; new entries are appended.' }),
    h('button', { type: 'button', id: 'download-2', text: 'Download the .jsonl', onclick: () => app.download() }),
  );
  sections.push(save);
  panel.replaceChildren(...sections);
}

function numberInput(id, value, set) {
  const input = h('input', { id, type: 'number', min: '0', step: '1000' });
  input.value = String(value);
  input.addEventListener('change', () => {
    const n = Number(input.value);
    if (Number.isFinite(n) && n >= 0) set(n);
  });
  return input;
}

function textInput(id, value, set, placeholder) {
  const input = h('input', { id, type: 'url', spellcheck: 'false', placeholder });
  input.value = value;
  input.addEventListener('input', () => set(input.value.trim()));
  return input;
}

function setStatus(el, text, kind = '') {
  lastStatus.text = text;
  lastStatus.kind = kind;
  // The tab may have been redrawn since the action started: update the status shown now.
  const shown = el.isConnected ? el : (document.getElementById(el.id) ?? el);
  shown.textContent = text;
  shown.className = `action-status ${kind}`;
}

/** Compacts at the session leaf (never at the selected entry: selecting does not move the leaf). */
async function compactNow(app, status, caps) {
  const controller = new AbortController();
  running = { controller };
  const settings = { keepRecentTokens: form.keepRecentTokens };
  const options = { settings, contextWindow: app.settings.contextWindow, signal: controller.signal };
  if (form.customInstructions.trim()) options.customInstructions = form.customInstructions.trim();
  const leafBefore = app.session.leafId;
  try {
    let result;
    if (form.strategy === 'snapcompact' && caps.snapcompact) {
      setStatus(status, 'snapcompact: rendering frames…', 'busy');
      await yieldToPage();
      // The frames are drawn in the worker, on a copy at the same leaf; the entry it wrote is
      // appended here as written (the same fields, the same timestamp).
      const done = await compactInWorker(app, status, controller.signal);
      await yieldToPage(); // receiving the entry (megabytes of frames) and appending it: two tasks
      const entryId = app.session.append('compaction', done.entry.fields, { now: done.entry.now });
      result = { entryId, tokensAfter: done.tokensAfter, report: done.report };
    } else if (form.strategy === 'chat') {
      if (!form.chatUrl) throw new Error('enter the base URL of an OpenAI-compatible endpoint');
      const url = chatCompletionsUrl(form.chatUrl);
      setStatus(status, `asking ${new URL(url).host} for a summary…`, 'busy');
      result = await app.session.compact({
        ...options,
        remoteEndpoint: url,
        model: form.model,
        headers: form.apiKey ? { authorization: `Bearer ${form.apiKey}` } : {},
      });
    } else if (form.strategy === 'remote') {
      if (!form.remoteUrl) throw new Error('enter the URL of the remote compaction endpoint');
      setStatus(status, `asking ${new URL(form.remoteUrl).host} for a summary…`, 'busy');
      result = await app.session.compact({ ...options, remoteEndpoint: form.remoteUrl });
    } else {
      throw new Error('choose a strategy');
    }
    // Both figures on the report's one ruler (the local estimate the header and the Context tab
    // show), not the entry's `tokensBefore` (the usage last reported before the compaction).
    const before = result.report?.tokensBefore ?? app.contextTokens(leafBefore).estimatedTokens;
    const after = result.report?.tokensAfter ?? result.tokensAfter;
    setStatus(
      status,
      `Compacted: ${fmt(before)} → ${fmt(after)} tokens. New compaction entry ${result.entryId}.`,
      'ok',
    );
    app.recordLeafMove(leafBefore, 'compaction');
    await yieldToPage();
    app.afterMutation({ select: result.entryId });
  } catch (err) {
    setStatus(status, `Not compacted (the session is unchanged): ${errorText(err)}`, 'error');
  } finally {
    running = null;
  }
}

async function navigateWithSummary(app, target, status) {
  const summarize = summarizerFromForm();
  if (!summarize) {
    setStatus(
      status,
      'Navigation with a summary needs an endpoint: choose "context-full" or "remote" above and fill it in.',
      'error',
    );
    return;
  }
  const before = app.session.leafId;
  try {
    setStatus(status, 'summarising the branch being left…', 'busy');
    const result = await app.session.navigateTree(target, { summarize });
    if (result?.cancelled) {
      setStatus(status, 'Navigation cancelled; nothing changed.');
      return;
    }
    app.recordLeafMove(before, 'navigate');
    setStatus(
      status,
      result?.summaryEntryId ? `Navigated; branch summary ${result.summaryEntryId} added.` : 'Navigated.',
      'ok',
    );
    app.afterMutation({ select: result?.summaryEntryId ?? app.session.leafId });
  } catch (err) {
    setStatus(status, `Not navigated: ${errorText(err)}`, 'error');
  }
}

/**
 * The `summarize` callback of the OpenAI-compatible endpoint set up in this tab (base URL, key,
 * model), whichever strategy is picked; null when no URL is set. The Simulate panel uses it.
 */
export function endpointSummarizer() {
  if (!form.chatUrl) return null;
  return chatSummarizer();
}

/** A `summarize` callback from the form (for APIs that take one rather than an endpoint). */
function summarizerFromForm() {
  if (form.strategy === 'chat' && form.chatUrl) return chatSummarizer();
  if (form.strategy === 'remote' && form.remoteUrl) {
    return async (request, { signal }) => {
      const res = await fetch(form.remoteUrl, {
        method: 'POST',
        signal,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          systemPrompt: request.systemPrompt,
          prompt: request.prompt,
          maxTokens: request.maxTokens,
        }),
      });
      if (!res.ok) throw Object.assign(new Error(`${res.status} ${res.statusText}`), { status: res.status });
      return (await res.json())?.summary ?? '';
    };
  }
  return null;
}

/** The summarizer of the OpenAI-compatible endpoint of the form: Chat Completions, the key as a bearer. */
function chatSummarizer() {
  const url = chatCompletionsUrl(form.chatUrl);
  return async (request, { signal } = {}) => {
    const res = await fetch(url, {
      method: 'POST',
      signal,
      headers: {
        'content-type': 'application/json',
        ...(form.apiKey ? { authorization: `Bearer ${form.apiKey}` } : {}),
      },
      body: JSON.stringify({
        model: form.model,
        max_tokens: request.maxTokens,
        messages: [
          { role: 'system', content: request.systemPrompt },
          { role: 'user', content: request.prompt },
        ],
      }),
    });
    if (!res.ok) throw Object.assign(new Error(`${res.status} ${res.statusText}`), { status: res.status });
    return (await res.json())?.choices?.[0]?.message?.content ?? '';
  };
}

/**
 * The snapcompact preview: the very compaction "Compact" writes (the same call, the same
 * options: `snapcompactOptions`), run in the frame worker on a throwaway copy of the session,
 * and the frames of its archive with their billed cost per provider. The session is untouched.
 */
async function snapcompactPreview(app, status, output) {
  const controller = new AbortController();
  running = { controller };
  previewScope.revokeAll();
  previewOutput = null;
  output.replaceChildren();
  try {
    setStatus(status, 'preparing…', 'busy');
    await yieldToPage();
    setStatus(status, 'snapcompact: rendering frames…', 'busy');
    // The very compaction "Compact" runs, in the worker on a copy: nothing is written here.
    const result = await compactInWorker(app, status, controller.signal, { preview: true });
    const { frames, prep } = result;
    const textTokens = prep.textTokens;
    const count = `${fmt(frames.length)} frame${frames.length === 1 ? '' : 's'}`;
    setStatus(
      status,
      `Preview: the compaction would write ${count} for ${fmt(prep.messages)} messages (≈${fmt(textTokens)} tokens as text); ${fmt(result.report?.tokensBefore)} → ${fmt(result.report?.tokensAfter)} tokens.`,
      'ok',
    );
    output.append(
      h(
        'p',
        { class: 'note preview-note' },
        frames.length
          ? 'Preview only — nothing was written. “Compact” writes this compaction: an archive of these frames between text edges kept verbatim.'
          : 'Preview only — nothing was written. “Compact” writes no frames here: what it summarises fits in the text edges it keeps verbatim (lower “Keep recent tokens” to image more).',
      ),
    );
    output.append(
      framesGallery(frames, previewScope, { title: 'snapcompact preview', textTokens, lightbox: app.lightbox }),
    );
    previewOutput = [...output.childNodes];
  } catch (err) {
    setStatus(status, `No preview: ${errorText(err)}`, 'error');
  } finally {
    running = null;
  }
}

/** The options of a snapcompact `compact()` from the form: Compact and Preview pass the same (the worker adds the signal). */
function snapcompactOptions(app) {
  const reader = READERS.find((r) => r.id === form.reader) ?? READERS[0];
  return {
    settings: { keepRecentTokens: form.keepRecentTokens },
    contextWindow: app.settings.contextWindow,
    strategy: 'snapcompact',
    provider: reader.provider,
    snapcompact: { model: { id: reader.id, api: reader.api }, maxFrames: form.maxFrames },
  };
}

// --- the snapcompact worker ---------------------------------------------------------------------

let worker = null; // the module worker that draws the frames (compact-worker.js)
let workerRequests = 0;
const workerPending = new Map(); // request id → { resolve, reject, onProgress }

function compactWorker() {
  if (worker) return worker;
  worker = new Worker(new URL('./compact-worker.js', import.meta.url), { type: 'module' });
  worker.addEventListener('message', ({ data }) => {
    const pending = workerPending.get(data.id);
    if (!pending) return;
    if (data.progress || data.font) {
      pending.onProgress(data.progress ?? 'font');
      return;
    }
    workerPending.delete(data.id);
    if (data.error) {
      const err = new Error(data.error.message);
      if (data.error.code) err.code = data.error.code;
      pending.reject(err);
    } else pending.resolve(data.done);
  });
  worker.addEventListener('error', (event) => {
    for (const p of workerPending.values()) p.reject(new Error(`the frame worker failed: ${event.message}`));
    workerPending.clear();
    worker = null;
  });
  return worker;
}

/**
 * Runs the form's snapcompact compaction at the leaf in the worker, on a copy of the session,
 * with a progress bar "frames k of n" under the status. Resolves with the worker's result: the
 * compaction entry's fields, the report's figures and the archive's frames.
 */
function compactInWorker(app, status, signal, { preview = false } = {}) {
  const id = ++workerRequests;
  const w = compactWorker();
  const bar = h('progress', { id: 'frames-progress', class: 'frames-progress', max: 1, value: 0 });
  status.after(bar);
  app.frameProgress = []; // the reports as received, for the tests
  const onProgress = (p) => {
    if (p === 'font') {
      setStatus(status, 'loading the fallback font (1.7 MB)…', 'busy');
      return;
    }
    app.frameProgress.push(p);
    if (p.phase !== 'frames') return;
    bar.max = Math.max(1, p.total);
    bar.value = p.done;
    bar.dataset.done = String(p.done);
    bar.dataset.total = String(p.total);
    setStatus(status, `snapcompact: frames ${fmt(p.done)} of ${fmt(p.total)}…`, 'busy');
  };
  const request = {
    id,
    bytes: app.session.toBytes(),
    leafId: app.session.leafId,
    options: snapcompactOptions(app),
    preview,
  };
  return new Promise((resolve, reject) => {
    workerPending.set(id, { resolve, reject, onProgress });
    signal.addEventListener('abort', () => w.postMessage({ id, abort: true }), { once: true });
    w.postMessage(request, [request.bytes.buffer]);
  }).finally(() => bar.remove());
}
